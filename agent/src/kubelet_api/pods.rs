//! The seam to the Pods this agent runs: `GET /pods` lists them, and log, exec and attach
//! requests for a Pod that is not among them get kubelet's 404. The Pod side implements it
//! (`pods/served/`); each Pod is shared with its store, never copied.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;

/// The Pods this agent runs.
pub(crate) trait PodSource: Send + Sync + 'static {
    /// The Pods, each shared with the store.
    fn pods(&self) -> Vec<Arc<Pod>>;

    /// The Pod `namespace/name`, shared with the store. By default it is searched for in
    /// [`Self::pods`]; a store that can look it up directly does.
    fn pod(&self, namespace: &str, name: &str) -> Option<Arc<Pod>> {
        self.pods().into_iter().find(|p| {
            p.metadata.namespace.as_deref() == Some(namespace)
                && p.metadata.name.as_deref() == Some(name)
        })
    }
}

impl<F: Fn() -> Vec<Arc<Pod>> + Send + Sync + 'static> PodSource for F {
    fn pods(&self) -> Vec<Arc<Pod>> {
        self()
    }
}
