//! The decision core: Pod facts + what we know of its VM -> one [`Decision`], whose Pod half
//! ([`PodStep`]) the reconciler carries out on the Pod object and whose VM half ([`VmStep`]) the
//! Pod's worker carries out with tart. Each half has exactly one executor, which matches it
//! without a catch-all arm, so a new step does not compile until it is handled.
//!
//! Level-triggered and idempotent: the same inputs always give the same decision, and carrying
//! out a step only moves the inputs forward. Pure; no I/O, the time is passed in.

use std::time::Duration;

use tokio::time::Instant;

use super::admission::Rejection;
use crate::backoff::CRASH_LOOP;

/// `spec.restartPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum RestartPolicy {
    /// Restart after any exit (the Kubernetes default).
    #[default]
    Always,
    /// Restart after a non-zero exit.
    OnFailure,
    /// Never restart.
    Never,
}

impl RestartPolicy {
    /// From the Pod field (unknown or absent: `Always`, the API default).
    pub(crate) fn from_field(f: Option<&str>) -> Self {
        match f {
            Some("Never") => Self::Never,
            Some("OnFailure") => Self::OnFailure,
            _ => Self::Always,
        }
    }

    /// Whether a VM that exited with `code` is started again.
    pub(crate) fn restarts(self, code: i32) -> bool {
        match self {
            Self::Always => true,
            Self::OnFailure => code != 0,
            Self::Never => false,
        }
    }

    /// Whether a run the agent ended (a failed liveness or startup probe, a failed `postStart`
    /// hook) is started again: unless the policy is `Never`, whatever its exit code (kubelet
    /// restarts a container it killed even when the container then exits 0).
    pub(crate) fn restarts_after_agent_kill(self) -> bool {
        self != Self::Never
    }
}

/// What the API tells us about the Pod.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PodFacts {
    /// `metadata.deletionTimestamp` is set.
    pub deleting: bool,
    /// Our finalizer is present.
    pub has_finalizer: bool,
    /// Our Node object is gone (deleted): nothing will ever run here again.
    pub node_gone: bool,
    /// `status.phase` is already Succeeded or Failed (phases never leave those).
    pub terminal: bool,
    /// Admission verdict, when the Pod cannot be a VM.
    pub rejection: Option<Rejection>,
    /// `spec.restartPolicy`.
    pub restart_policy: RestartPolicy,
    /// The agent runs as the node (NodeRestriction forbids Pod metadata writes): no finalizer,
    /// graceful deletion holds the Pod until the agent deletes it with grace 0, as kubelet.
    pub without_finalizer: bool,
    /// `activeDeadlineSeconds` has passed since `status.startTime`.
    pub deadline_exceeded: bool,
    /// The container has a `postStart` hook.
    pub post_start: bool,
    /// The container has a `preStop` hook.
    pub pre_stop: bool,
}

/// The `tart run` process as the worker knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Process {
    /// Not started (or cleared for a restart).
    #[default]
    None,
    Running {
        /// `tart ip` answered.
        has_ip: bool,
        /// Status says Running and ready.
        marked: bool,
    },
    /// Ended with this exit code (signals count as non-zero).
    Exited {
        /// Exit code.
        code: i32,
    },
}

/// Everything known about one Pod's VM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct VmFacts {
    /// The image is present (pulled now, or cached and allowed).
    pub image_ready: bool,
    /// The VM was cloned.
    pub cloned: bool,
    /// `tart set` was applied to this clone.
    pub configured: bool,
    /// The guest's shares (environment, volumes, command) are resolved and their write has
    /// started (`tart run` waits for it to end).
    pub prepared: bool,
    /// We hold one of the node's VM slots.
    pub slot_held: bool,
    /// The run process.
    pub process: Process,
    /// Retry or restart not before this instant.
    pub blocked_until: Option<Instant>,
    /// The VM ran and exited for good (the restart policy says no).
    pub finished: bool,
    /// How many times the VM was started again after an exit.
    pub restarts: u32,
    /// The current or last run was ended by the agent: a failed liveness or startup probe, or
    /// a failed `postStart` hook.
    pub agent_killed: bool,
    /// The `postStart` hook of the current run has run (completed, or failed and the run is
    /// being stopped).
    pub post_started: bool,
    /// The job marked itself busy in the status share.
    pub job_busy: bool,
    /// The Pod's deletion, once the worker has seen it.
    pub termination: Option<Termination>,
}

/// Where a deletion stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Termination {
    /// The grace period ends here (deletion seen + grace).
    pub deadline: Instant,
    /// The `preStop` hook ran (or there is none to run).
    pub pre_stopped: bool,
}

/// What to do next for one Pod: one step on the Pod object, one on its VM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Decision {
    /// The reconciler's half.
    pub pod: PodStep,
    /// The worker's half.
    pub vm: VmStep,
}

/// A step on the Pod object, carried out by the reconciler.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PodStep {
    /// Nothing to change on the object: keep the worker's input and the Pod status in step.
    Sync,
    /// Add our finalizer and requeue at once.
    AddFinalizer,
    /// Mark the Pod Failed with this reason; emit a Warning.
    Reject(Rejection),
    RemoveFinalizer,
    /// Delete the Pod with grace 0 and a UID precondition.
    DeletePod,
    /// Mark the Pod Failed with reason `DeadlineExceeded` (its VM is stopped).
    FailDeadline,
}

/// A step on the Pod's VM, carried out by its worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum VmStep {
    /// Nothing to do until the input or the VM changes.
    Idle,
    /// A retry backoff is running: wait this long.
    Wait(Duration),
    /// Ensure the image is present (pull per policy).
    Pull,
    /// `tart clone`.
    Clone,
    /// `tart set`.
    Set,
    /// Resolve the environment, volumes and command and start writing the guest's shares
    /// (waits `CreateContainerConfigError` while a Secret or ConfigMap is missing). Before the
    /// clone, which the write overlaps.
    Prepare,
    /// Take a VM slot (waits Pending with an event when none is free).
    WaitForSlot,
    /// `tart run`.
    Run,
    /// `tart ip` with a deadline.
    WaitIp,
    /// Run the `postStart` hook (the container is not ready, and probes wait, until it ends).
    PostStart,
    /// Report Running and ready.
    MarkRunning,
    /// The VM exited and the restart policy restarts it: back off this long, then run again.
    Restart(Duration),
    /// The VM exited for good: report the terminal state.
    Finish,
    /// Run the `preStop` hook, within the grace period.
    PreStop,
    /// The job is busy: wait for it to go idle or end, at most this long (the rest of the grace).
    WaitForJob(Duration),
    /// Stop the VM (graceful).
    Stop,
    /// `tart delete`, and the VM's guest directory and logs.
    Delete,
}

impl Decision {
    fn pod(pod: PodStep) -> Self {
        Self {
            pod,
            vm: VmStep::Idle,
        }
    }

    fn vm(vm: VmStep) -> Self {
        Self {
            pod: PodStep::Sync,
            vm,
        }
    }
}

/// Kubelet's container restart backoff after `restart_count` restarts.
pub(crate) fn crash_backoff(restart_count: u32) -> Duration {
    CRASH_LOOP.delay(restart_count)
}

/// The next step for the Pod object and for its VM.
pub(crate) fn plan(pod: &PodFacts, vm: &VmFacts, now: Instant) -> Decision {
    let alive = matches!(vm.process, Process::Running { .. });
    if pod.node_gone && !pod.deleting {
        // Our Node was deleted: let go of the Pod so it can never hang Terminating because of
        // us. The VM is left alone; if the Pod goes away, orphan GC removes it, and if the
        // Node comes back, the finalizer is added again.
        return if pod.has_finalizer {
            Decision::pod(PodStep::RemoveFinalizer)
        } else {
            Decision::vm(VmStep::Idle)
        };
    }
    if pod.deleting {
        return if alive {
            Decision::vm(termination_step(pod, vm, now))
        } else if vm.cloned || vm.prepared {
            Decision::vm(VmStep::Delete)
        } else if pod.has_finalizer {
            Decision::pod(PodStep::RemoveFinalizer)
        } else {
            Decision::pod(PodStep::DeletePod)
        };
    }
    if pod.terminal {
        // Phases never leave Succeeded/Failed; a live process here would be a bug elsewhere.
        return Decision::vm(if alive { VmStep::Stop } else { VmStep::Idle });
    }
    if !pod.has_finalizer && !pod.without_finalizer {
        return Decision::pod(PodStep::AddFinalizer);
    }
    if let Some(r) = &pod.rejection {
        return Decision::pod(PodStep::Reject(r.clone()));
    }
    if pod.deadline_exceeded {
        return if alive {
            Decision::vm(VmStep::Stop)
        } else {
            Decision::pod(PodStep::FailDeadline)
        };
    }
    Decision::vm(vm_step(pod, vm, now))
}

/// The VM step of a deleted Pod whose VM runs: `preStop`, then wait while the job is busy and
/// the grace lasts, then stop. Before the worker has recorded the deletion, stop (its worker
/// records it before it plans, so this is only a guard).
fn termination_step(pod: &PodFacts, vm: &VmFacts, now: Instant) -> VmStep {
    let Some(t) = vm.termination else {
        return VmStep::Stop;
    };
    if pod.pre_stop && !t.pre_stopped {
        VmStep::PreStop
    } else if vm.job_busy && t.deadline > now {
        VmStep::WaitForJob(t.deadline - now)
    } else {
        VmStep::Stop
    }
}

/// The VM step of an admitted Pod that is neither deleting nor terminal.
fn vm_step(pod: &PodFacts, vm: &VmFacts, now: Instant) -> VmStep {
    if vm.finished {
        return VmStep::Idle;
    }
    match vm.process {
        Process::Running { has_ip: false, .. } => return VmStep::WaitIp,
        Process::Running { marked: false, .. } if pod.post_start && !vm.post_started => {
            return VmStep::PostStart;
        }
        Process::Running { marked: false, .. } => return VmStep::MarkRunning,
        Process::Running { .. } => return VmStep::Idle,
        Process::Exited { code } => {
            let rp = pod.restart_policy;
            return if rp.restarts(code) || (vm.agent_killed && rp.restarts_after_agent_kill()) {
                VmStep::Restart(crash_backoff(vm.restarts))
            } else {
                VmStep::Finish
            };
        }
        Process::None => {}
    }
    if let Some(until) = vm.blocked_until.filter(|u| *u > now) {
        return VmStep::Wait(until - now);
    }
    // Kubelet's order: the image, then the container's configuration, then the container.
    // What the guest reads (a Secret, a ConfigMap) is resolved before the VM is cloned, so a
    // Pod that must wait `CreateContainerConfigError` costs no clone.
    if !vm.image_ready && !vm.cloned {
        VmStep::Pull
    } else if !vm.prepared {
        VmStep::Prepare
    } else if !vm.cloned {
        VmStep::Clone
    } else if !vm.configured {
        VmStep::Set
    } else if !vm.slot_held {
        VmStep::WaitForSlot
    } else {
        VmStep::Run
    }
}

#[cfg(test)]
mod tests;
