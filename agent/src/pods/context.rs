//! What every part of the Pod side shares: configuration, clients, the node's slots and health,
//! metrics, the event sink, in-flight pulls, and the per-Pod workers.

use std::{
    collections::HashMap,
    path::PathBuf,
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::channel::mpsc::UnboundedSender;
use tart::Tart;
use tokio::sync::watch;

use super::{admission::HostLimits, metrics::PodMetrics, pull::Pulls, sink::EventSink};
use crate::{
    node::health::HostHealth,
    slots::VmSlots,
    vm::{naming::VmNaming, supervisor::WorkerHandle},
};

/// Our finalizer on every Pod we run; removed once the VM is gone.
pub const FINALIZER: &str = "tart.run/vm";

/// Pod-side settings (taken from the agent's `Config`).
#[derive(Debug, Clone)]
pub struct PodsConfig {
    /// This node.
    pub node_name: String,
    /// The node's InternalIP (Pods' `hostIP`).
    pub host_ip: String,
    /// Per-VM `tart run` log files.
    pub vm_log_dir: PathBuf,
    /// A VM log file is cut to its last half past this size.
    pub vm_log_cap_bytes: u64,
    /// `tart run` exit within this window is a start failure.
    pub run_start_window: Duration,
    /// `tart ip --wait`.
    pub ip_wait: Duration,
    /// Grace when the Pod gives none.
    pub default_grace: Duration,
    /// Read `imagePullSecrets` (needs `get secrets`).
    pub read_pull_secrets: bool,
    /// Deadline of each API request.
    pub api_timeout: Duration,
    /// Pods reconciled at once.
    pub concurrency: u16,
    /// How often orphan VMs are looked for.
    pub gc_interval: Duration,
}

/// Shared state. One per agent.
pub struct Shared<T: Tart> {
    /// API client.
    pub client: kube::Client,
    /// Tart driver.
    pub tart: Arc<T>,
    /// Settings.
    pub cfg: PodsConfig,
    /// VM names.
    pub naming: VmNaming,
    /// The node's VM slots.
    pub slots: VmSlots,
    /// TartReady input.
    pub health: HostHealth,
    /// Metrics.
    pub metrics: PodMetrics,
    /// Events.
    pub events: EventSink,
    /// In-flight pulls.
    pub pulls: Pulls,
    /// Wakes the controller to reconcile (a worker's state changed).
    pub trigger: UnboundedSender<()>,
    /// Our Node: `None` until first read; allocatable for admission; gone flag.
    pub node: watch::Receiver<NodeView>,
    /// Per-Pod workers by UID.
    pub workers: Mutex<HashMap<String, WorkerHandle>>,
    /// Consecutive failed reconciles by UID (error backoff).
    pub api_failures: Mutex<HashMap<String, u32>>,
    /// `tart_kubelet_api_errors_total` (the node side's family; resource `pod` here).
    pub api_errors: crate::metrics::ApiErrors,
}

/// What the Pod side needs to know about its Node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NodeView {
    /// The Node object was found missing at the last check.
    pub gone: bool,
    /// Allocatable resources, once read.
    pub limits: Option<HostLimits>,
}

impl<T: Tart> Shared<T> {
    /// Ask the controller to reconcile (coalesced by the controller's queue).
    pub fn wake(&self) {
        let _ = self.trigger.unbounded_send(());
    }

    /// Run `f` on the worker table.
    pub fn with_workers<R>(&self, f: impl FnOnce(&mut HashMap<String, WorkerHandle>) -> R) -> R {
        let mut w = self
            .workers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&mut w)
    }

    /// Run `f` on the reconcile failure counts.
    pub fn with_api_failures<R>(&self, f: impl FnOnce(&mut HashMap<String, u32>) -> R) -> R {
        let mut m = self
            .api_failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&mut m)
    }
}
