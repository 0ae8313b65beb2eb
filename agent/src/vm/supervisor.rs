//! The per-Pod worker: one task per Pod that owns its VM.
//!
//! It carries out the VM steps of [`plan`] — pull, clone, set, slot, run, ip, restart — and the
//! teardown steps (stop, delete), owns the `tart run` handle and the slot guard, watches the
//! VM's exit, and publishes a [`WorkerState`] the reconciler turns into Pod status. Slow tart
//! calls run here, never in a reconcile, so one stuck Pod never holds up another. A teardown
//! request (Pod deleted) cancels an in-flight pull, clone, set or ip wait at once;
//! the tart crate kills the process group of a dropped call. `tart run` is never cancelled
//! half-way: it is bounded by its start window.

use std::{net::Ipv4Addr, sync::Arc, time::Duration};

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::jiff::Timestamp;
use tart::{ExitInfo, ExitReason, RunningVm, Tart, VmName};
use tokio::{sync::watch, task::AbortHandle, time::Instant};
use tracing::{Instrument, debug, info, info_span};

use crate::{
    pods::{
        context::Shared,
        image::{ImageRef, PullPolicy},
        metrics::PodOnce,
        plan::{PodFacts, Process, Step, VmFacts, plan},
        resources::VmResources,
        status::{ContainerView, Terminated},
    },
    slots::SlotGuard,
};

mod outcomes;
mod steps;

/// What the worker is told about its Pod (replaced on every reconcile).
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerInput {
    /// Pod facts for [`plan`].
    pub facts: PodFacts,
    /// Pod UID.
    pub uid: String,
    /// Event target.
    pub obj: ObjectReference,
    /// `<pod>_<ns>(<uid>)`, for BackOff messages.
    pub pod_label: String,
    /// Namespace (for pull secrets).
    pub namespace: String,
    /// Container name.
    pub container: String,
    /// Image.
    pub image: ImageRef,
    /// Pull policy.
    pub pull_policy: PullPolicy,
    /// `imagePullSecrets` names.
    pub pull_secrets: Vec<String>,
    /// VM resources.
    pub resources: VmResources,
    /// Pod creation time.
    pub created: Option<Timestamp>,
    /// Termination grace.
    pub grace: Duration,
}

/// What the worker publishes.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerState {
    /// Facts for [`plan`].
    pub facts: VmFacts,
    /// The VM.
    pub vm: VmName,
    /// Container state for status.
    pub view: ContainerView,
    /// Previous run.
    pub last_terminated: Option<Terminated>,
    /// Guest IP.
    pub pod_ip: Option<Ipv4Addr>,
    /// The VM was found running after an agent restart.
    pub adopted: bool,
    /// `<host>/<repository>@sha256:<hex>` of the image, once known (the Pod's `imageID`).
    pub image_id: Option<String>,
}

/// The reconciler's handle on a worker. Dropping it stops the worker task (not the VM).
pub struct WorkerHandle {
    /// Latest Pod input.
    pub input: watch::Sender<WorkerInput>,
    /// Latest state.
    pub state: watch::Receiver<WorkerState>,
    task: AbortHandle,
}

impl Drop for WorkerHandle {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// How a worker begins.
pub enum Start<V> {
    /// Nothing exists yet.
    Fresh,
    /// Recovery found the VM cloned but not running.
    Cloned,
    /// Recovery found the VM running and re-attached to it.
    Adopted(V, Option<SlotGuard>),
    /// Recovery found the VM stopped although its Pod had already started it: it exited
    /// while no agent watched (exit code unknown).
    ExitedUnwatched,
}

/// Spawn a worker for `vm`. `prior_restarts` carries the Pod's `restartCount` over an agent
/// restart (0 for a fresh Pod).
pub fn spawn<T: Tart>(
    shared: Arc<Shared<T>>,
    vm: VmName,
    input: WorkerInput,
    start: Start<T::Vm>,
    prior_restarts: u32,
) -> WorkerHandle {
    let span = info_span!("vm_worker", pod.uid = %input.uid, %vm);
    let (w, input, state) = worker(shared, vm, input, start, prior_restarts);
    let task = tokio::spawn(w.run().instrument(span)).abort_handle();
    WorkerHandle { input, state, task }
}

/// A worker and the two ends of its channels, not yet running.
fn worker<T: Tart>(
    shared: Arc<Shared<T>>,
    vm: VmName,
    input: WorkerInput,
    start: Start<T::Vm>,
    prior_restarts: u32,
) -> (
    Worker<T>,
    watch::Sender<WorkerInput>,
    watch::Receiver<WorkerState>,
) {
    let mut state = WorkerState {
        facts: VmFacts::default(),
        vm: vm.clone(),
        view: waiting("ContainerCreating", None),
        last_terminated: None,
        pod_ip: None,
        adopted: false,
        image_id: None,
    };
    let mut proc = None;
    let mut slot = None;
    let mut once = PodOnce::default();
    match start {
        Start::Fresh => {}
        Start::Cloned => {
            state.facts.image_ready = true;
            state.facts.cloned = true;
        }
        Start::ExitedUnwatched => {
            state.facts = VmFacts {
                image_ready: true,
                cloned: true,
                configured: true,
                process: Process::Exited { code: UNKNOWN_EXIT },
                ..VmFacts::default()
            };
            once = PodOnce::adopted();
        }
        Start::Adopted(v, guard) => {
            state.facts = VmFacts {
                image_ready: true,
                cloned: true,
                configured: true,
                slot_held: true,
                process: Process::Running {
                    has_ip: false,
                    marked: false,
                },
                ..VmFacts::default()
            };
            state.view = ContainerView::Running {
                started_at: Timestamp::try_from(v.started_at())
                    .unwrap_or_else(|_| Timestamp::now()),
                ready: false,
            };
            state.adopted = true;
            proc = Some(Arc::new(v));
            slot = guard;
            once = PodOnce::adopted();
        }
    }
    state.facts.restarts = prior_restarts;
    let pending_exit = matches!(state.facts.process, Process::Exited { .. }).then(|| Terminated {
        exit_code: UNKNOWN_EXIT,
        reason: "ContainerStatusUnknown".into(),
        message: Some("The VM stopped while the agent was not running".into()),
        started_at: Timestamp::now(),
        finished_at: Timestamp::now(),
    });
    let (in_tx, in_rx) = watch::channel(input);
    let (out_tx, out_rx) = watch::channel(state.clone());
    let w = Worker {
        shared,
        input: in_rx,
        out: out_tx,
        state,
        proc,
        slot,
        once,
        failures: 0,
        fail_seq: 0,
        run_started: None,
        pending_exit,
        slot_waits: 0,
        creds: None,
        overhead: OverheadClock::new(),
    };
    (w, in_tx, out_rx)
}

/// Exit code reported when the exit was not seen (kubelet's `ContainerStatusUnknown`).
pub const UNKNOWN_EXIT: i32 = 137;

fn waiting(reason: &str, message: Option<String>) -> ContainerView {
    ContainerView::Waiting {
        reason: reason.into(),
        message,
    }
}

struct Worker<T: Tart> {
    shared: Arc<Shared<T>>,
    input: watch::Receiver<WorkerInput>,
    out: watch::Sender<WorkerState>,
    state: WorkerState,
    proc: Option<Arc<T::Vm>>,
    slot: Option<SlotGuard>,
    once: PodOnce,
    /// Consecutive failed provisioning attempts (backoff); reset by a successful start.
    failures: u32,
    /// Every failed provisioning attempt of this Pod, never reset: the event keys use it, so
    /// a fault after a restart is a new occurrence, not a repeat of one before it.
    fail_seq: u32,
    /// When the current run began (monotonic, wall).
    run_started: Option<(Instant, Timestamp)>,
    /// The last exit, until the plan decides between restart and finish.
    pending_exit: Option<Terminated>,
    slot_waits: u32,
    creds: Option<tart::Credentials>,
    /// When this worker first saw the Pod, and the time since spent in steps that are not the
    /// agent's own work (tart operations, slot waits, backoff) — for the overhead histogram.
    overhead: OverheadClock,
}

/// Measures the agent's own time per Pod before `tart run` (`pod_agent_overhead_seconds`).
#[derive(Debug, Clone, Copy)]
struct OverheadClock {
    born: Instant,
    excluded: Duration,
    /// No failure and no backoff so far: only clean first starts are measured.
    clean: bool,
}

impl OverheadClock {
    fn new() -> Self {
        Self {
            born: Instant::now(),
            excluded: Duration::ZERO,
            clean: true,
        }
    }

    /// The agent's own time so far.
    fn own_time(&self) -> Duration {
        self.born.elapsed().saturating_sub(self.excluded)
    }
}

/// Resolves when the Pod is being deleted or the handle was dropped.
async fn teardown(rx: &mut watch::Receiver<WorkerInput>) {
    let _ = rx.wait_for(|i| i.facts.deleting).await;
}

impl<T: Tart> Worker<T> {
    async fn run(mut self) {
        let first = self.input.borrow().clone();
        if !self.state.facts.cloned {
            let occ = crate::pods::events::Occurrence::CreatingVm {
                vm: self.state.vm.to_string(),
            };
            self.emit(&first, "creating", occ);
        }
        loop {
            if self.input.has_changed().is_err() {
                debug!("worker handle dropped; worker ends, the VM is left as it is");
                return;
            }
            let input = self.input.borrow_and_update().clone();
            let now = std::time::Instant::now();
            let step = plan(&input.facts, &self.state.facts, now);
            debug!(?step, "vm step");
            let step_started = Instant::now();
            let failures_before = self.failures;
            match step {
                Step::Pull => self.pull(&input).await,
                Step::Clone => self.clone_vm(&input).await,
                Step::Set => self.set(&input).await,
                Step::WaitForSlot => self.wait_slot(&input).await,
                Step::Run => self.run_vm(&input).await,
                Step::WaitIp => self.wait_ip(&input).await,
                Step::MarkRunning => {
                    if self.state.image_id.is_none() {
                        self.state.image_id = image_id(&*self.shared.tart, &input.image).await;
                    }
                    self.state.facts.process = Process::Running {
                        has_ip: true,
                        marked: true,
                    };
                    info!(ip = ?self.state.pod_ip, "vm running");
                }
                Step::Restart(d) => self.restart(&input, d),
                Step::Finish if !self.state.facts.finished => self.finish(),
                Step::Wait(d) => {
                    self.overhead.clean = false;
                    self.backing_off(&input);
                    self.publish();
                    self.idle(Some(d)).await;
                }
                Step::Stop => self.stop(&input).await,
                Step::Delete => self.delete().await,
                _ => {
                    self.publish();
                    self.idle(None).await;
                }
            }
            if matches!(
                step,
                Step::Pull | Step::Clone | Step::Set | Step::WaitForSlot | Step::Wait(_)
            ) {
                self.overhead.excluded += step_started.elapsed();
            }
            if self.failures > failures_before {
                self.overhead.clean = false;
            }
            self.publish();
        }
    }

    /// Publish the state if it changed, and wake the reconciler.
    fn publish(&self) {
        let changed = self.out.send_if_modified(|s| {
            if *s == self.state {
                false
            } else {
                *s = self.state.clone();
                true
            }
        });
        if changed {
            self.shared.wake();
        }
    }

    fn emit(&self, input: &WorkerInput, key: &str, occ: crate::pods::events::Occurrence) {
        self.shared.events.emit(&input.uid, &input.obj, key, occ);
    }

    /// Wait for new input, the VM's exit, or `max`.
    async fn idle(&mut self, max: Option<Duration>) {
        let proc = self.proc.clone().filter(|_| self.alive());
        let exit = async move {
            match proc {
                Some(p) => p.wait().await,
                None => std::future::pending().await,
            }
        };
        let sleep = tokio::time::sleep(max.unwrap_or(Duration::from_secs(3600)));
        tokio::select! {
            _ = self.input.changed() => {}
            info = exit => self.on_exit(info),
            _ = sleep => {}
        }
    }

    fn alive(&self) -> bool {
        matches!(self.state.facts.process, Process::Running { .. })
    }
}

/// The image's `<host>/<repository>@sha256:<hex>`: its own digest when pinned, else the digest
/// its cached tag points at (Tart's default tag is `latest`).
async fn image_id<T: Tart>(tart: &T, image: &ImageRef) -> Option<String> {
    let digest = match &image.digest {
        Some(d) => d.clone(),
        None => {
            let tag = image.tag.as_deref().unwrap_or("latest");
            tart.cached_digest(&image.host, &image.repository, tag)
                .await?
        }
    };
    Some(format!("{}/{}@{digest}", image.host, image.repository))
}

/// `tart run` options for a VM: NAT networking, no shares, a per-VM log file.
pub fn run_opts(cfg: &crate::pods::context::PodsConfig, vm: &VmName) -> tart::RunOpts {
    tart::RunOpts {
        dirs: vec![],
        network: tart::Network::Shared,
        suspendable: false,
        log_path: cfg.vm_log_dir.join(format!("{vm}.log")),
        log_cap_bytes: cfg.vm_log_cap_bytes,
        start_window: cfg.run_start_window,
    }
}

/// The exit code a container runtime would report: the code, or 128 + signal.
pub fn exit_code(info: &ExitInfo) -> i32 {
    match (info.code, info.signal, info.reason) {
        (Some(c), _, _) => c,
        (None, Some(s), _) => 128 + s,
        (None, None, ExitReason::Completed) => 0,
        (None, None, _) => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_container_runtime_conventions() {
        let e = |reason, code, signal| ExitInfo {
            reason,
            code,
            signal,
        };
        assert_eq!(exit_code(&e(ExitReason::Completed, Some(0), None)), 0);
        assert_eq!(exit_code(&e(ExitReason::Failed, Some(3), None)), 3);
        assert_eq!(exit_code(&e(ExitReason::Signaled, None, Some(9))), 137);
        assert_eq!(exit_code(&e(ExitReason::Unknown, None, None)), 1);
        assert_eq!(exit_code(&e(ExitReason::Completed, None, None)), 0);
    }
}

#[cfg(test)]
mod worker_tests;
