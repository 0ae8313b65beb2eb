//! The seam to the Pods this agent runs: `GET /pods` lists them, and log requests for a Pod
//! that is not among them get kubelet's 404. The Pod side's store implements it.

use k8s_openapi::api::core::v1::Pod;

/// The Pods this agent runs.
pub trait PodSource: Send + Sync + 'static {
    /// A snapshot of the Pods.
    fn pods(&self) -> Vec<Pod>;
}

impl<F: Fn() -> Vec<Pod> + Send + Sync + 'static> PodSource for F {
    fn pods(&self) -> Vec<Pod> {
        self()
    }
}
