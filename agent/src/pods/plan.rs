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
pub enum RestartPolicy {
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
    pub fn from_field(f: Option<&str>) -> Self {
        match f {
            Some("Never") => Self::Never,
            Some("OnFailure") => Self::OnFailure,
            _ => Self::Always,
        }
    }

    /// Whether a VM that exited with `code` is started again.
    pub fn restarts(self, code: i32) -> bool {
        match self {
            Self::Always => true,
            Self::OnFailure => code != 0,
            Self::Never => false,
        }
    }

    /// Whether a run the agent ended for a failed liveness or startup probe is started again:
    /// unless the policy is `Never`, whatever its exit code (kubelet restarts a container it
    /// killed for a probe even when the container then exits 0).
    pub fn restarts_after_probe_kill(self) -> bool {
        self != Self::Never
    }
}

/// What the API tells us about the Pod.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodFacts {
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
}

/// The `tart run` process as the worker knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Process {
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
pub struct VmFacts {
    /// The image is present (pulled now, or cached and allowed).
    pub image_ready: bool,
    /// The VM was cloned.
    pub cloned: bool,
    /// `tart set` was applied to this clone.
    pub configured: bool,
    /// The guest's shares (environment, volumes, command) are written.
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
    /// The current or last run was ended by the agent for a failed liveness or startup probe.
    pub probe_killed: bool,
}

/// What to do next for one Pod: one step on the Pod object, one on its VM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// The reconciler's half.
    pub pod: PodStep,
    /// The worker's half.
    pub vm: VmStep,
}

/// A step on the Pod object, carried out by the reconciler.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PodStep {
    /// Nothing to change on the object: keep the worker's input and the Pod status in step.
    Sync,
    /// Add our finalizer and requeue at once.
    AddFinalizer,
    /// Mark the Pod Failed with this reason; emit a Warning.
    Reject(Rejection),
    /// Remove our finalizer.
    RemoveFinalizer,
    /// Delete the Pod with grace 0 and a UID precondition.
    DeletePod,
    /// Mark the Pod Failed with reason `DeadlineExceeded` (its VM is stopped).
    FailDeadline,
}

/// A step on the Pod's VM, carried out by its worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VmStep {
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
    /// Resolve the environment, volumes and command and write the guest's shares (waits
    /// `CreateContainerConfigError` while a Secret or ConfigMap is missing).
    Prepare,
    /// Take a VM slot (waits Pending with an event when none is free).
    WaitForSlot,
    /// `tart run`.
    Run,
    /// `tart ip` with a deadline.
    WaitIp,
    /// Report Running and ready.
    MarkRunning,
    /// The VM exited and the restart policy restarts it: back off this long, then run again.
    Restart(Duration),
    /// The VM exited for good: report the terminal state.
    Finish,
    /// Stop the VM (graceful).
    Stop,
    /// `tart delete`.
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
pub fn crash_backoff(restart_count: u32) -> Duration {
    CRASH_LOOP.delay(restart_count)
}

/// The next step for the Pod object and for its VM.
pub fn plan(pod: &PodFacts, vm: &VmFacts, now: Instant) -> Decision {
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
            Decision::vm(VmStep::Stop)
        } else if vm.cloned {
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

/// The VM step of an admitted Pod that is neither deleting nor terminal.
fn vm_step(pod: &PodFacts, vm: &VmFacts, now: Instant) -> VmStep {
    if vm.finished {
        return VmStep::Idle;
    }
    match vm.process {
        Process::Running { has_ip: false, .. } => return VmStep::WaitIp,
        Process::Running { marked: false, .. } => return VmStep::MarkRunning,
        Process::Running { .. } => return VmStep::Idle,
        Process::Exited { code } => {
            let rp = pod.restart_policy;
            return if rp.restarts(code) || (vm.probe_killed && rp.restarts_after_probe_kill()) {
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
    if !vm.image_ready && !vm.cloned {
        VmStep::Pull
    } else if !vm.cloned {
        VmStep::Clone
    } else if !vm.configured {
        VmStep::Set
    } else if !vm.prepared {
        VmStep::Prepare
    } else if !vm.slot_held {
        VmStep::WaitForSlot
    } else {
        VmStep::Run
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pods::admission::{RejectReason, Rejection};

    fn pod() -> PodFacts {
        PodFacts {
            has_finalizer: true,
            ..Default::default()
        }
    }

    fn running() -> VmFacts {
        VmFacts {
            image_ready: true,
            cloned: true,
            configured: true,
            prepared: true,
            slot_held: true,
            process: Process::Running {
                has_ip: true,
                marked: true,
            },
            ..Default::default()
        }
    }

    fn pod_step(p: PodStep) -> Decision {
        Decision::pod(p)
    }

    fn vm_step(v: VmStep) -> Decision {
        Decision::vm(v)
    }

    #[test]
    fn first_sight_adds_the_finalizer_before_anything_else() {
        let d = plan(&PodFacts::default(), &VmFacts::default(), Instant::now());
        assert_eq!(d, pod_step(PodStep::AddFinalizer));
    }

    #[test]
    fn a_rejected_pod_is_rejected_after_the_finalizer() {
        let r = Rejection {
            reason: RejectReason::ContainerCount,
            message: "two".into(),
        };
        let p = PodFacts {
            rejection: Some(r.clone()),
            ..pod()
        };
        let d = plan(&p, &VmFacts::default(), Instant::now());
        assert_eq!(d, pod_step(PodStep::Reject(r)));
    }

    #[test]
    fn provisioning_walks_pull_clone_set_slot_run_ip_mark() {
        let now = Instant::now();
        let p = pod();
        let mut vm = VmFacts::default();
        let mut seen = vec![];
        for _ in 0..10 {
            let d = plan(&p, &vm, now);
            assert_eq!(d.pod, PodStep::Sync, "provisioning is the worker's");
            seen.push(d.vm.clone());
            match d.vm {
                VmStep::Pull => vm.image_ready = true,
                VmStep::Clone => vm.cloned = true,
                VmStep::Set => vm.configured = true,
                VmStep::Prepare => vm.prepared = true,
                VmStep::WaitForSlot => vm.slot_held = true,
                VmStep::Run => {
                    vm.process = Process::Running {
                        has_ip: false,
                        marked: false,
                    }
                }
                VmStep::WaitIp => {
                    vm.process = Process::Running {
                        has_ip: true,
                        marked: false,
                    }
                }
                VmStep::MarkRunning => vm.process = running().process,
                _ => break,
            }
        }
        use VmStep::*;
        assert_eq!(
            seen,
            vec![
                Pull,
                Clone,
                Set,
                Prepare,
                WaitForSlot,
                Run,
                WaitIp,
                MarkRunning,
                Idle
            ]
        );
    }

    #[test]
    fn a_cloned_vm_is_not_pulled_again() {
        let vm = VmFacts {
            cloned: true,
            ..Default::default()
        };
        assert_eq!(plan(&pod(), &vm, Instant::now()), vm_step(VmStep::Set));
    }

    #[test]
    fn a_backoff_blocks_until_it_expires() {
        let now = Instant::now();
        let vm = VmFacts {
            blocked_until: Some(now + Duration::from_secs(7)),
            ..Default::default()
        };
        let wait = vm_step(VmStep::Wait(Duration::from_secs(7)));
        assert_eq!(plan(&pod(), &vm, now), wait);
        let later = now + Duration::from_secs(8);
        assert_eq!(plan(&pod(), &vm, later), vm_step(VmStep::Pull));
    }

    #[test]
    fn exit_follows_restart_policy() {
        let now = Instant::now();
        let exited = |code| VmFacts {
            process: Process::Exited { code },
            ..running()
        };
        let with = |rp| PodFacts {
            restart_policy: rp,
            ..pod()
        };
        use RestartPolicy::*;
        let finish = vm_step(VmStep::Finish);
        assert_eq!(plan(&with(Never), &exited(0), now), finish);
        assert_eq!(plan(&with(Never), &exited(1), now), finish);
        assert_eq!(plan(&with(OnFailure), &exited(0), now), finish);
        let ten = vm_step(VmStep::Restart(Duration::from_secs(10)));
        assert_eq!(plan(&with(OnFailure), &exited(1), now), ten);
        assert_eq!(plan(&with(Always), &exited(0), now), ten);
        let probe_killed = |code| VmFacts {
            probe_killed: true,
            ..exited(code)
        };
        assert_eq!(plan(&with(OnFailure), &probe_killed(0), now), ten);
        assert_eq!(plan(&with(Always), &probe_killed(0), now), ten);
        assert_eq!(plan(&with(Never), &probe_killed(137), now), finish);
        let third = VmFacts {
            restarts: 2,
            ..exited(3)
        };
        let forty = vm_step(VmStep::Restart(Duration::from_secs(40)));
        assert_eq!(plan(&with(Always), &third, now), forty);
        let done = VmFacts {
            finished: true,
            ..exited(0)
        };
        assert_eq!(plan(&with(Never), &done, now), vm_step(VmStep::Idle));
    }

    #[test]
    fn deletion_stops_then_deletes_then_releases_then_deletes_pod() {
        let now = Instant::now();
        let p = PodFacts {
            deleting: true,
            ..pod()
        };
        assert_eq!(plan(&p, &running(), now), vm_step(VmStep::Stop));
        let stopped = VmFacts {
            process: Process::Exited { code: 0 },
            ..running()
        };
        assert_eq!(plan(&p, &stopped, now), vm_step(VmStep::Delete));
        let gone = VmFacts::default();
        assert_eq!(plan(&p, &gone, now), pod_step(PodStep::RemoveFinalizer));
        let released = PodFacts {
            has_finalizer: false,
            ..p
        };
        assert_eq!(plan(&released, &gone, now), pod_step(PodStep::DeletePod));
    }

    #[test]
    fn deletion_wins_over_rejection_and_backoff() {
        let now = Instant::now();
        let p = PodFacts {
            deleting: true,
            rejection: Some(Rejection {
                reason: RejectReason::Volume,
                message: String::new(),
            }),
            ..pod()
        };
        let vm = VmFacts {
            blocked_until: Some(now + Duration::from_secs(60)),
            ..Default::default()
        };
        assert_eq!(plan(&p, &vm, now), pod_step(PodStep::RemoveFinalizer));
    }

    #[test]
    fn node_gone_drops_the_finalizer_and_leaves_the_vm_alone() {
        let now = Instant::now();
        let p = PodFacts {
            node_gone: true,
            ..pod()
        };
        assert_eq!(
            plan(&p, &running(), now),
            pod_step(PodStep::RemoveFinalizer)
        );
        let released = PodFacts {
            has_finalizer: false,
            ..p.clone()
        };
        assert_eq!(plan(&released, &running(), now), vm_step(VmStep::Idle));
        // A deletion still tears down normally while we run.
        let deleting = PodFacts {
            deleting: true,
            ..p
        };
        assert_eq!(plan(&deleting, &running(), now), vm_step(VmStep::Stop));
    }

    #[test]
    fn terminal_pods_are_left_alone_and_a_live_vm_is_stopped() {
        let p = PodFacts {
            terminal: true,
            ..pod()
        };
        let now = Instant::now();
        assert_eq!(plan(&p, &VmFacts::default(), now), vm_step(VmStep::Idle));
        assert_eq!(plan(&p, &running(), now), vm_step(VmStep::Stop));
    }

    #[test]
    fn a_node_identity_never_adds_a_finalizer_and_deletes_the_pod_once_the_vm_is_gone() {
        let now = Instant::now();
        let p = PodFacts {
            without_finalizer: true,
            ..PodFacts::default()
        };
        assert_eq!(plan(&p, &VmFacts::default(), now), vm_step(VmStep::Pull));
        let deleting = PodFacts {
            deleting: true,
            ..p
        };
        assert_eq!(plan(&deleting, &running(), now), vm_step(VmStep::Stop));
        let stopped = VmFacts {
            process: Process::Exited { code: 0 },
            ..running()
        };
        assert_eq!(plan(&deleting, &stopped, now), vm_step(VmStep::Delete));
        let gone = VmFacts::default();
        assert_eq!(plan(&deleting, &gone, now), pod_step(PodStep::DeletePod));
    }

    #[test]
    fn a_passed_deadline_stops_the_vm_then_fails_the_pod() {
        let now = Instant::now();
        let p = PodFacts {
            deadline_exceeded: true,
            ..pod()
        };
        assert_eq!(plan(&p, &running(), now), vm_step(VmStep::Stop));
        let stopped = VmFacts {
            process: Process::Exited { code: 137 },
            finished: true,
            ..running()
        };
        assert_eq!(plan(&p, &stopped, now), pod_step(PodStep::FailDeadline));
        assert_eq!(
            plan(&p, &VmFacts::default(), now),
            pod_step(PodStep::FailDeadline)
        );
        let failed = PodFacts {
            terminal: true,
            ..p
        };
        assert_eq!(plan(&failed, &stopped, now), vm_step(VmStep::Idle));
    }

    #[test]
    fn crash_backoff_is_kubelets_10s_doubling_to_5m() {
        let s: Vec<u64> = (0..8).map(|n| crash_backoff(n).as_secs()).collect();
        assert_eq!(s, vec![10, 20, 40, 80, 160, 300, 300, 300]);
        assert_eq!(crash_backoff(u32::MAX).as_secs(), 300);
    }
}
