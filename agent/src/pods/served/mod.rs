//! The Pods this agent runs, as the kubelet API lists them (`/pods`) and finds them for
//! `/containerLogs`: a view of the Pod controller's store, empty until the controller starts.

use std::sync::{Arc, OnceLock};

use k8s_openapi::api::core::v1::Pod;
use kube::runtime::reflector::Store;

use crate::kubelet_api::PodSource;

pub mod logs;
pub mod stats;

/// A shared view of the controller's Pod store; clones share it.
#[derive(Clone, Default)]
pub struct ServedPods(Arc<OnceLock<Store<Pod>>>);

impl ServedPods {
    /// Serve `store` from now on (the first store set wins).
    pub fn set(&self, store: Store<Pod>) {
        let _ = self.0.set(store);
    }
}

impl ServedPods {
    /// The Pods, once the controller's watch has listed them; `None` before (an empty answer
    /// then would mean "no Pods" when it only means "not known yet").
    pub fn synced_pods(&self) -> Option<Vec<Pod>> {
        let store = self.0.get()?;
        listed(store).then(|| store.state().iter().map(|p| (**p).clone()).collect())
    }
}

/// Whether the controller's watch has listed the Pods into `store` (its first full list is
/// in). Polled, never awaited: the store's readiness wakes only its latest waiter, and more
/// than one reader asks.
pub fn listed(store: &Store<Pod>) -> bool {
    use futures::FutureExt;
    matches!(store.wait_until_ready().now_or_never(), Some(Ok(())))
}

impl PodSource for ServedPods {
    fn pods(&self) -> Vec<Pod> {
        self.0
            .get()
            .map(|s| s.state().iter().map(|p| (**p).clone()).collect())
            .unwrap_or_default()
    }
}
