//! What a Pod's worker needs, and nothing more: the tart driver, its settings, the node's VM
//! slots and health, metrics, the event sink, in-flight pulls, an API client for pull secrets,
//! and a [`Waker`] that asks the reconciler to look at this one Pod again. The controller's
//! context contains one of these; the worker never sees the controller's.

use std::{path::PathBuf, sync::Arc, time::Duration};

use futures::channel::mpsc::UnboundedSender;
use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use kube::runtime::reflector::ObjectRef;
use tart::{Tart, VmName};

use crate::{
    config::LauncherMode,
    container_logs::LogWatch,
    guest_contract::prepare::GuestSettings,
    images::{goldens::Goldens, metrics::ImageMetrics, prepull::pacer::Pacer},
    node::health::HostHealth,
    pods::{metrics::PodMetrics, pull::Pulls, served::RunningVms, sink::EventSink},
    slots::VmSlots,
    vitals::Vitals,
};

/// The worker's settings.
#[derive(Debug, Clone)]
pub(crate) struct WorkerConfig {
    /// Where each VM's `tart run` output is written (`<vm>.log`).
    pub vm_log_dir: PathBuf,
    /// A VM log file is cut to its last half past this size.
    pub vm_log_cap_bytes: u64,
    /// `tart run` exiting within this window is a start failure.
    pub run_start_window: Duration,
    /// Deadline of one `tart ip --wait`.
    pub ip_wait: Duration,
    /// Read `imagePullSecrets` (needs `get secrets`).
    pub read_pull_secrets: bool,
    /// Deadline of each API request.
    pub api_timeout: Duration,
    /// What preparing a guest needs (per-VM directories, node facts, token refresh cap).
    pub guest: GuestSettings,
    /// The Pods' container logs.
    pub pod_log_dir: PathBuf,
    /// Where a Pod's guest launcher comes from, unless its annotation says otherwise.
    pub launcher: LauncherMode,
    /// How long a guest has, once it has an IP, for a launcher to report.
    pub launcher_timeout: Duration,
}

impl WorkerConfig {
    /// `tart run` options for `vm`: NAT networking and Tart's disk defaults, a per-VM log file,
    /// no shares (the worker adds its guest's and its Pod's VM profile).
    pub(crate) fn run_opts(&self, vm: &VmName) -> tart::RunOpts {
        tart::RunOpts {
            dirs: vec![],
            network: tart::Network::Shared,
            root_disk: tart::RootDiskOpts::default(),
            suspendable: false,
            log_path: self.vm_log_dir.join(format!("{vm}.log")),
            log_cap_bytes: self.vm_log_cap_bytes,
            start_window: self.run_start_window,
        }
    }
}

/// Asks the reconciler to reconcile one Pod again (its worker's state changed). Coalesced by
/// the controller's queue.
#[derive(Clone, Debug)]
pub(crate) struct Waker(UnboundedSender<ObjectRef<Pod>>);

impl Waker {
    /// A waker that sends to `tx`.
    pub(crate) fn new(tx: UnboundedSender<ObjectRef<Pod>>) -> Self {
        Self(tx)
    }

    /// Reconcile the Pod `obj` refers to.
    pub(crate) fn wake(&self, obj: &ObjectReference) {
        let (Some(name), Some(ns)) = (obj.name.as_deref(), obj.namespace.as_deref()) else {
            return;
        };
        let _ = self.0.unbounded_send(ObjectRef::new(name).within(ns));
    }
}

/// Everything a worker uses. One per agent, shared by every worker.
pub(crate) struct WorkerContext<T: Tart> {
    /// API client: pull secrets, the guest's Secrets, ConfigMaps and tokens.
    pub client: kube::Client,
    pub tart: Arc<T>,
    pub cfg: WorkerConfig,
    /// The node's VM slots.
    pub slots: VmSlots,
    /// Host faults and VM starts are reported here (the node's `TartReady`).
    pub health: HostHealth,
    /// Pod-side metrics.
    pub metrics: PodMetrics,
    pub events: EventSink,
    /// In-flight pulls, shared between workers.
    pub pulls: Pulls,
    /// Golden base VMs per image digest, shared between workers.
    pub goldens: Goldens,
    /// Golden hits and misses.
    pub image_metrics: ImageMetrics,
    /// The fleet's pull tokens (a Pod's pull takes one without waiting).
    pub pacer: Option<Pacer>,
    /// Reconciles this worker's Pod when its state changes.
    pub waker: Waker,
    /// The VMs' vitals: what explains a death.
    pub vitals: Vitals,
    /// The VMs whose runs the workers hold, where each lists its own.
    pub running: RunningVms,
    /// The agent's file watch, which wakes each run's log collector.
    pub log_watch: LogWatch,
}
