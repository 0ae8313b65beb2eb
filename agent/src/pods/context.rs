//! The Pod controller's context: its settings, the worker context it hands every worker, VM
//! names, our Node as the Pod side sees it, the per-Pod workers and reconcile failure counts.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use k8s_openapi::api::core::v1::Pod;
use tart::Tart;
use tokio::sync::watch;

use super::profile::{ProfileWait, choose, classes::RuntimeClasses};
use super::{
    admission::HostLimits,
    worker::{WorkerContext, WorkerHandle, WorkerState},
};
use crate::config::{VmProfile, VmProfiles};
use crate::metrics::ApiErrors;
use crate::vm_name::VmNaming;

/// The controller's settings.
#[derive(Debug, Clone)]
pub(crate) struct PodsConfig {
    pub node_name: String,
    /// The node's InternalIP (Pods' `hostIP`).
    pub host_ip: String,
    /// Grace when the Pod gives none.
    pub default_grace: Duration,
    /// Deadline of each API request.
    pub api_timeout: Duration,
    /// Pods reconciled at once.
    pub concurrency: u16,
    /// How often orphan VMs are looked for.
    pub gc_interval: Duration,
    /// The agent runs as the node: no finalizer (see [`crate::config::Identity`]).
    pub without_finalizer: bool,
    /// The VM profiles by RuntimeClass handler.
    pub vm_profiles: VmProfiles,
    /// How often the host checks look again whether a profile is runnable.
    pub host_check_interval: Duration,
}

/// The controller's context. One per agent.
pub(crate) struct Shared<T: Tart> {
    pub client: kube::Client,
    pub cfg: PodsConfig,
    /// What every worker is given.
    pub worker: Arc<WorkerContext<T>>,
    /// Pod UID <-> VM name.
    pub naming: VmNaming,
    /// Our Node: allocatable for admission, and whether it was deleted.
    pub node: watch::Receiver<NodeView>,
    /// Per-Pod workers by UID.
    pub workers: Mutex<HashMap<String, WorkerHandle>>,
    /// Consecutive failed reconciles by UID (error backoff).
    pub api_failures: Mutex<HashMap<String, u32>>,
    /// `tart_kubelet_api_errors_total` (the node side's family; resource `pod` here).
    pub api_errors: ApiErrors,
    /// Whether this agent holds its Node's Lease: no Pod write without it.
    pub lease: crate::node::fence::Fence,
    /// The RuntimeClass watch cache.
    pub classes: RuntimeClasses,
}

/// What the Pod side needs to know about its Node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct NodeView {
    /// The Node object was found missing at the last check.
    pub gone: bool,
    /// Allocatable resources, once read.
    pub limits: Option<HostLimits>,
}

fn lock<V>(m: &Mutex<V>) -> std::sync::MutexGuard<'_, V> {
    // Every critical section is a single map operation: a panic cannot leave it half-done.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl<T: Tart> Shared<T> {
    /// Run `f` on the worker table.
    pub(crate) fn with_workers<R>(
        &self,
        f: impl FnOnce(&mut HashMap<String, WorkerHandle>) -> R,
    ) -> R {
        f(&mut lock(&self.workers))
    }

    /// The latest state of the Pod's worker, if it has one.
    pub(crate) fn worker_state(&self, uid: &str) -> Option<WorkerState> {
        self.with_workers(|w| w.get(uid).map(|h| h.state.borrow().clone()))
    }

    /// The VM profile of `pod`, or why its VM cannot be made now ([`choose`]).
    pub(crate) fn profile_for(&self, pod: &Pod) -> Result<VmProfile, ProfileWait> {
        let class = pod
            .spec
            .as_ref()
            .and_then(|s| s.runtime_class_name.as_deref());
        let unavailable = self.worker.health.snapshot().unavailable_profiles;
        choose(
            class,
            |c| self.classes.lookup(c),
            &self.cfg.vm_profiles,
            &unavailable,
        )
    }

    /// Run `f` on the reconcile failure counts.
    pub(crate) fn with_api_failures<R>(&self, f: impl FnOnce(&mut HashMap<String, u32>) -> R) -> R {
        f(&mut lock(&self.api_failures))
    }
}
