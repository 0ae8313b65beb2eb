//! The per-Pod worker: one task per Pod that owns its VM.
//!
//! It carries out the VM half of [`plan`]'s decision — pull, prepare, clone, set, slot, run,
//! ip, restart, stop, delete — watches the VM's exit, and publishes a [`WorkerState`] the
//! reconciler turns into Pod status. Its state is grouped by lifetime: the worker's own (event
//! numbering, backoff, the once-per-Pod metrics), the provisioned VM's (pull credentials, image
//! digest, shares) and one run's (the `tart run` handle, its slot and the tasks serving the
//! guest, ended by dropping it), both in `lifetimes.rs`, and the termination's. Each step file
//! (`provision.rs`, `run.rs`, `termination.rs`) works on its part. Slow tart calls run here, never in a reconcile, so one
//! stuck Pod never holds up another. A teardown request (Pod deleted) cancels an in-flight pull,
//! clone, set or ip wait at once; the tart crate kills the process group of a dropped call.
//! `tart run` is never cancelled half-way: it is bounded by its start window. Time is tokio's,
//! so tests can pause it.

use std::{
    sync::{Arc, atomic::AtomicU32},
    time::Duration,
};

use k8s_openapi::{
    api::core::v1::{ObjectReference, Pod},
    jiff::Timestamp,
};
use tart::{RunningVm, Tart, VmName};
use tokio::{sync::watch, task::AbortHandle, time::Instant};
use tracing::{Instrument, debug, info_span};

use super::{
    ending::unwatched,
    events::Occurrence,
    image::{ImageRef, PullPolicy},
    metrics::PodOnce,
    plan::{PodFacts, Process, VmFacts, VmStep, plan},
    resources::VmResources,
    status::{ContainerView, Terminated},
    termination::{JOB_POLL, TermClock},
};
use crate::config::VmProfile;
use crate::guest_contract::{prepare::NodeAllocatable, status::launcher_reported};
use crate::lifecycle::probes::ProberEvent;
use crate::pods::profile::ProfileWait;
use crate::slots::SlotGuard;

mod context;
mod guest;
mod guest_write;
mod hooks;
mod launcher;
mod lifetimes;
mod outcomes;
mod overhead;
mod probing;
mod provision;
mod publish;
mod run;
mod termination;

pub(crate) use context::{Waker, WorkerConfig, WorkerContext};
use lifetimes::{Provisioning, Run};
use overhead::OverheadClock;
pub(crate) use publish::WorkerState;

/// What the worker is told about its Pod (replaced on every reconcile).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct WorkerInput {
    /// Pod facts for [`plan`].
    pub facts: PodFacts,
    pub uid: String,
    /// The Pod, as events and wake-ups refer to it.
    pub obj: ObjectReference,
    /// `<pod>_<ns>(<uid>)`, for BackOff messages.
    pub pod_label: String,
    /// Namespace (for pull secrets).
    pub namespace: String,
    pub container: String,
    pub image: ImageRef,
    pub pull_policy: PullPolicy,
    /// `imagePullSecrets` names.
    pub pull_secrets: Vec<String>,
    /// What `tart set` gives the VM.
    pub resources: VmResources,
    /// Pod creation time (start of the provision delay).
    pub created: Option<Timestamp>,
    pub grace: Duration,
    /// The Pod, for what its guest is given (env, volumes, command).
    pub pod: PodSnapshot,
    /// Node allocatable, for `resourceFieldRef` limits the container does not set.
    pub alloc: NodeAllocatable,
    /// What `tart run` gives the VM besides its shares (the Pod's RuntimeClass), or why that
    /// is not known now (no VM run starts until it is).
    pub profile: Result<VmProfile, ProfileWait>,
}

/// The Pod object a guest is prepared from. Equal when spec, labels and annotations are: the
/// agent's own status writes are not new input for the worker.
#[derive(Debug, Clone)]
pub(crate) struct PodSnapshot(pub Arc<Pod>);

impl PartialEq for PodSnapshot {
    fn eq(&self, other: &Self) -> bool {
        let (a, b) = (&self.0, &other.0);
        Arc::ptr_eq(a, b)
            || (a.spec == b.spec
                && a.metadata.labels == b.metadata.labels
                && a.metadata.annotations == b.metadata.annotations)
    }
}

/// The reconciler's handle on a worker. Dropping it stops the worker task (not the VM).
pub(crate) struct WorkerHandle {
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
pub(crate) enum Start<V> {
    /// Nothing exists yet.
    Fresh,
    /// Recovery found the VM cloned but not running.
    Cloned,
    /// Recovery found the VM running and re-attached to it.
    Adopted {
        /// The live `tart run`.
        vm: V,
        /// Its slot.
        slot: Option<SlotGuard>,
        /// When this run started, as the Pod's status already says; `None` takes the time
        /// the process started.
        started_at: Option<Timestamp>,
    },
    /// Recovery found the VM stopped although its Pod had already started it: it exited
    /// while no agent watched (exit code unknown).
    ExitedUnwatched,
}

/// Spawn a worker for `vm`. `prior_restarts` carries the Pod's `restartCount` over an agent
/// restart (0 for a fresh Pod).
pub(crate) fn spawn<T: Tart>(
    ctx: Arc<WorkerContext<T>>,
    vm: VmName,
    input: WorkerInput,
    start: Start<T::Vm>,
    prior_restarts: u32,
) -> WorkerHandle {
    let span = info_span!("vm_worker", pod.uid = %input.uid, %vm);
    let (in_tx, in_rx) = watch::channel(input);
    let w = Worker::new(ctx, vm, in_rx, start, prior_restarts);
    let (out_tx, out_rx) = watch::channel(w.state.clone());
    let task = tokio::spawn(w.run(out_tx).instrument(span)).abort_handle();
    WorkerHandle {
        input: in_tx,
        state: out_rx,
        task,
    }
}

/// A Pod's worker. It keeps what lives as long as the worker; what lives for the provisioned VM,
/// for one run and for the termination is grouped by lifetime, each dropped as one.
struct Worker<T: Tart> {
    ctx: Arc<WorkerContext<T>>,
    input: watch::Receiver<WorkerInput>,
    state: WorkerState,
    once: PodOnce,
    /// Consecutive failed provisioning attempts (backoff); reset by a successful start.
    failures: u32,
    /// Every failed provisioning attempt of this Pod, never reset: events are numbered with
    /// it, so a fault after a restart is a new occurrence, not a repeat of one before it.
    fail_seq: u32,
    /// The last exit, until the plan decides between restart and finish.
    pending_exit: Option<Terminated>,
    /// Numbers the Pod's slot waits across runs.
    slot_waits: u32,
    /// Numbers the Pod's waits for its VM profile.
    profile_waits: u32,
    /// The agent's own time for this Pod before `tart run` (`pod_agent_overhead_seconds`).
    overhead: OverheadClock,
    /// Numbers the Pod's `Unhealthy` events across runs.
    unhealthy_seq: Arc<AtomicU32>,
    /// What lives as long as the provisioned VM (until it is deleted).
    prov: Provisioning,
    /// The slot taken for the next run; the run holds it once it starts.
    next_slot: Option<SlotGuard>,
    /// The current run, while `tart run` lives: dropping it ends the run's tasks.
    run: Option<Run<T::Vm>>,
    /// The Pod's deletion, once seen: for `pod_termination_seconds`.
    term: Option<TermClock>,
}

/// How long a stopped VM's `tart run` may take to exit after `tart stop` returned.
const STOP_SLACK: Duration = Duration::from_secs(10);

/// Resolves when the Pod is being deleted or the handle was dropped.
async fn teardown(rx: &mut watch::Receiver<WorkerInput>) {
    let _ = rx.wait_for(|i| i.facts.deleting).await;
}

impl<T: Tart> Worker<T> {
    fn new(
        ctx: Arc<WorkerContext<T>>,
        vm: VmName,
        input: watch::Receiver<WorkerInput>,
        start: Start<T::Vm>,
        prior_restarts: u32,
    ) -> Self {
        let mut w = Worker {
            ctx,
            input,
            state: WorkerState::creating(vm),
            once: PodOnce::default(),
            failures: 0,
            fail_seq: 0,
            pending_exit: None,
            slot_waits: 0,
            profile_waits: 0,
            overhead: OverheadClock::new(),
            unhealthy_seq: Arc::new(AtomicU32::new(0)),
            prov: Provisioning::default(),
            next_slot: None,
            run: None,
            term: None,
        };
        w.begin(start);
        w.state.facts.restarts = prior_restarts;
        w
    }

    /// Take over what recovery found.
    fn begin(&mut self, start: Start<T::Vm>) {
        let provisioned = VmFacts {
            image_ready: true,
            cloned: true,
            configured: true,
            // The shares of a VM found after a restart are prepared again before its next
            // start: this incarnation does not know them.
            prepared: false,
            ..VmFacts::default()
        };
        match start {
            Start::Fresh => {}
            Start::Cloned => {
                self.state.facts.image_ready = true;
                self.state.facts.cloned = true;
            }
            Start::ExitedUnwatched => {
                let end = unwatched();
                self.state.facts = VmFacts {
                    process: Process::Exited { code: end.code },
                    ..provisioned
                };
                let now = Timestamp::now();
                self.pending_exit = Some(Terminated {
                    exit_code: end.code,
                    reason: end.reason,
                    message: end.message,
                    started_at: now,
                    finished_at: now,
                    disruption: end.disruption,
                });
                self.once = PodOnce::adopted();
            }
            Start::Adopted {
                vm,
                slot,
                started_at,
            } => {
                self.state.facts = VmFacts {
                    slot_held: true,
                    process: Process::Running {
                        has_ip: false,
                        marked: false,
                    },
                    // Its postStart hook ran before the agent restarted.
                    post_started: true,
                    ..provisioned
                };
                let started_at = started_at.unwrap_or_else(|| {
                    Timestamp::try_from(vm.started_at()).unwrap_or_else(|_| Timestamp::now())
                });
                // Started before the agent restarted: its startup probe is not run again.
                self.state.view = ContainerView::Running {
                    started_at,
                    started: true,
                    ready: false,
                };
                self.state.adopted = true;
                let status = self.ctx.cfg.guest.layout.status(&self.state.vm);
                self.prov.adopted_status = launcher_reported(&status);
                self.start_run(vm, slot, None);
                self.once = PodOnce::adopted();
            }
        }
    }

    async fn run(mut self, out: watch::Sender<WorkerState>) {
        let first = self.input.borrow().clone();
        if !self.state.facts.cloned {
            let vm = self.state.vm.to_string();
            self.emit(&first, 0, Occurrence::CreatingVm { vm });
        }
        if self.state.adopted {
            // The shares exist from before the agent restarted; keep their volumes current and
            // go on copying the run's output (the collector resumes from its checkpoint).
            self.serve_run(&first);
        }
        loop {
            if self.input.has_changed().is_err() {
                debug!("worker handle dropped; worker ends, the VM is left as it is");
                return;
            }
            let input = self.input.borrow_and_update().clone();
            self.observe_deletion(&input);
            let step = plan(&input.facts, &self.state.facts, Instant::now()).vm;
            debug!(?step, "vm step");
            let step_started = Instant::now();
            let failures_before = self.failures;
            let own_work = self.execute(&step, &input, &out).await;
            if !own_work {
                self.overhead.excluded += step_started.elapsed();
            }
            if self.failures > failures_before {
                self.overhead.clean = false;
            }
            self.publish(&out);
        }
    }

    /// Carry out one VM step. Returns whether its time counts as the agent's own work.
    async fn execute(
        &mut self,
        step: &VmStep,
        input: &WorkerInput,
        out: &watch::Sender<WorkerState>,
    ) -> bool {
        match *step {
            VmStep::Pull => {
                self.pull(input, out).await;
                false
            }
            VmStep::Clone => {
                self.clone_vm(input).await;
                false
            }
            VmStep::Set => {
                self.set(input).await;
                false
            }
            VmStep::Prepare => {
                self.prepare(input).await;
                true
            }
            VmStep::WaitForSlot => {
                self.wait_slot(input, out).await;
                false
            }
            VmStep::Run => {
                self.run_vm(input).await;
                true
            }
            VmStep::WaitIp => {
                self.wait_ip(input).await;
                true
            }
            VmStep::PostStart => {
                self.post_start(input).await;
                true
            }
            VmStep::MarkRunning => {
                self.mark_running(input).await;
                true
            }
            VmStep::Restart(d) => {
                self.restart(input, d);
                true
            }
            VmStep::Finish => {
                self.finish();
                true
            }
            VmStep::Wait(d) => {
                self.overhead.clean = false;
                self.backing_off(input);
                self.publish(out);
                self.idle(Some(d)).await;
                false
            }
            VmStep::PreStop => {
                self.pre_stop(input).await;
                true
            }
            VmStep::WaitForJob(left) => {
                self.wait_for_job(input, left).await;
                true
            }
            VmStep::Stop => {
                self.stop(input).await;
                true
            }
            VmStep::Delete => {
                self.delete(input).await;
                true
            }
            VmStep::Idle => {
                self.publish(out);
                self.idle(None).await;
                true
            }
        }
    }

    /// Publish the state if it changed, and ask for this Pod to be reconciled.
    fn publish(&self, out: &watch::Sender<WorkerState>) {
        let mut wake = false;
        out.send_if_modified(|s| {
            if *s == self.state {
                false
            } else {
                wake = publish::wakes_reconciler(s, &self.state);
                *s = self.state.clone();
                true
            }
        });
        if wake {
            self.ctx.waker.wake(&self.input.borrow().obj);
        }
    }

    /// Publish `occ`, numbered `seq` among occurrences of its kind for this Pod.
    fn emit(&self, input: &WorkerInput, seq: u32, occ: Occurrence) {
        self.ctx.events.emit(&input.uid, &input.obj, seq, occ);
    }

    /// Wait for new input, the VM's exit, or `max`.
    async fn idle(&mut self, max: Option<Duration>) {
        let proc = self.proc().filter(|_| self.alive());
        let exit = async move {
            match proc {
                Some(p) => p.wait().await,
                None => std::future::pending().await,
            }
        };
        // A running job's busy/idle mark is read this often.
        let max = match max {
            None if self.alive() && self.prov.has_status_share() => Some(JOB_POLL),
            other => other,
        };
        let sleep = tokio::time::sleep(max.unwrap_or(Duration::from_secs(3600)));
        let prober = self.run.as_mut().and_then(|r| r.prober.as_mut());
        let probe = async move {
            match prober {
                Some(p) => p.next().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = self.input.changed() => {}
            info = exit => self.on_exit(info),
            ev = probe => match ev {
                ProberEvent::Status => self.probe_changed(),
                ProberEvent::Kill(kill) => {
                    let input = self.input.borrow().clone();
                    self.probe_kill(&input, kill).await;
                }
            },
            _ = sleep => self.poll_job(),
        }
    }

    fn alive(&self) -> bool {
        matches!(self.state.facts.process, Process::Running { .. })
    }
}

#[cfg(test)]
mod guest_write_tests;
#[cfg(test)]
mod hooks_tests;
#[cfg(test)]
mod lifetimes_tests;
#[cfg(test)]
mod probes_tests;
#[cfg(test)]
mod publish_tests;
#[cfg(test)]
mod test_support;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod timing_tests;
