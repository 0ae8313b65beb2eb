//! The Pod side's implementations of the seams through which the kubelet API and the vitals
//! reach the Pods this agent runs: the Pods themselves ([`ServedPods`], `/pods` and every
//! lookup), their logs ([`logs`], `/containerLogs`), exec into their VMs ([`exec`]) and their
//! usage ([`stats`], `/stats/summary`). All of them read the controller's Pod store by
//! reference and ask the workers' [`RunningVms`] which VMs run.

use std::sync::{Arc, OnceLock};

use k8s_openapi::api::core::v1::Pod;
use kube::runtime::reflector::{ObjectRef, Store};

use crate::kubelet_api::PodSource;

pub(crate) mod exec;
pub(crate) mod logs;
pub(crate) mod running;
pub(crate) mod stats;

pub(crate) use running::{RunListing, RunningVms};

/// A shared view of the controller's Pod store, empty until the controller starts, and of the
/// VMs its workers run; clones share both.
#[derive(Clone, Default)]
pub(crate) struct ServedPods {
    store: Arc<OnceLock<Store<Pod>>>,
    running: RunningVms,
}

impl ServedPods {
    /// Serve `store` from now on (the first store set wins).
    pub(crate) fn set(&self, store: Store<Pod>) {
        let _ = self.store.set(store);
    }

    /// The VMs the workers run; the workers list theirs here.
    pub(crate) fn running(&self) -> &RunningVms {
        &self.running
    }

    /// The Pods, shared with the store, once the controller's watch has listed them; `None`
    /// before (an empty answer then would mean "no Pods" when it only means "not known yet").
    pub(crate) fn synced_pods(&self) -> Option<Vec<Arc<Pod>>> {
        let store = self.store.get()?;
        listed(store).then(|| store.state())
    }
}

/// Whether the controller's watch has listed the Pods into `store` (its first full list is
/// in). Polled, never awaited: the store's readiness wakes only its latest waiter, and more
/// than one reader asks.
pub(crate) fn listed(store: &Store<Pod>) -> bool {
    use futures::FutureExt;
    matches!(store.wait_until_ready().now_or_never(), Some(Ok(())))
}

impl PodSource for ServedPods {
    fn pods(&self) -> Vec<Arc<Pod>> {
        self.store.get().map(Store::state).unwrap_or_default()
    }

    fn pod(&self, namespace: &str, name: &str) -> Option<Arc<Pod>> {
        self.store
            .get()?
            .get(&ObjectRef::new(name).within(namespace))
    }
}

#[cfg(test)]
mod tests;
