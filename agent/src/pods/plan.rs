//! The decision core: Pod facts + what we know of its VM -> the next [`Step`].
//!
//! Level-triggered and idempotent: the same inputs always give the same step, and executing a
//! step only moves the inputs forward. The reconciler runs the Pod-level steps (finalizer,
//! rejection, teardown); the per-Pod worker runs the VM steps (pull … ip, restart). Both call
//! [`plan`]. Pure; no I/O, time is passed in.

use std::time::{Duration, Instant};

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
}

/// The `tart run` process as the worker knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Process {
    /// Not started (or cleared for a restart).
    #[default]
    None,
    /// Running.
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
}

/// The next thing to do for a Pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Add our finalizer and requeue at once.
    AddFinalizer,
    /// Mark the Pod Failed with this reason; emit a Warning.
    Reject(Rejection),
    /// A retry or restart backoff is running: wait this long.
    Wait(Duration),
    /// Ensure the image is present (pull per policy).
    Pull,
    /// `tart clone`.
    Clone,
    /// `tart set`.
    Set,
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
    /// The VM exited for good: report the terminal phase.
    Finish,
    /// Stop the VM (graceful).
    Stop,
    /// `tart delete`.
    Delete,
    /// Remove our finalizer.
    RemoveFinalizer,
    /// Delete the Pod with grace 0 and a UID precondition.
    DeletePod,
    /// Nothing to do until something changes.
    Nothing,
}

/// Kubelet's container restart backoff after `restart_count` restarts.
pub fn crash_backoff(restart_count: u32) -> Duration {
    CRASH_LOOP.delay(restart_count)
}

/// Decide.
pub fn plan(pod: &PodFacts, vm: &VmFacts, now: Instant) -> Step {
    let alive = matches!(vm.process, Process::Running { .. });
    if pod.node_gone && !pod.deleting {
        // Our Node was deleted: let go of the Pod so it can never hang Terminating because of
        // us. The VM is left alone; if the Pod goes away, orphan GC removes it, and if the
        // Node comes back, the finalizer is added again.
        return if pod.has_finalizer {
            Step::RemoveFinalizer
        } else {
            Step::Nothing
        };
    }
    if pod.deleting {
        if alive {
            return Step::Stop;
        }
        if vm.cloned {
            return Step::Delete;
        }
        if pod.has_finalizer {
            return Step::RemoveFinalizer;
        }
        return Step::DeletePod;
    }
    if pod.terminal {
        // Phases never leave Succeeded/Failed; a live process here would be a bug elsewhere.
        return if alive { Step::Stop } else { Step::Nothing };
    }
    if !pod.has_finalizer {
        return Step::AddFinalizer;
    }
    if let Some(r) = &pod.rejection {
        return Step::Reject(r.clone());
    }
    if vm.finished {
        return Step::Finish;
    }
    match vm.process {
        Process::Running { has_ip: false, .. } => return Step::WaitIp,
        Process::Running { marked: false, .. } => return Step::MarkRunning,
        Process::Running { .. } => return Step::Nothing,
        Process::Exited { code } => {
            return if pod.restart_policy.restarts(code) {
                Step::Restart(crash_backoff(vm.restarts))
            } else {
                Step::Finish
            };
        }
        Process::None => {}
    }
    if let Some(until) = vm.blocked_until.filter(|u| *u > now) {
        return Step::Wait(until - now);
    }
    if !vm.image_ready && !vm.cloned {
        return Step::Pull;
    }
    if !vm.cloned {
        return Step::Clone;
    }
    if !vm.configured {
        return Step::Set;
    }
    if !vm.slot_held {
        return Step::WaitForSlot;
    }
    Step::Run
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
            slot_held: true,
            process: Process::Running {
                has_ip: true,
                marked: true,
            },
            ..Default::default()
        }
    }

    #[test]
    fn first_sight_adds_the_finalizer_before_anything_else() {
        let p = PodFacts::default();
        assert_eq!(
            plan(&p, &VmFacts::default(), Instant::now()),
            Step::AddFinalizer
        );
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
        assert_eq!(
            plan(&p, &VmFacts::default(), Instant::now()),
            Step::Reject(r)
        );
    }

    #[test]
    fn provisioning_walks_pull_clone_set_slot_run_ip_mark() {
        let now = Instant::now();
        let p = pod();
        let mut vm = VmFacts::default();
        let mut seen = vec![];
        for _ in 0..10 {
            let s = plan(&p, &vm, now);
            seen.push(s.clone());
            match s {
                Step::Pull => vm.image_ready = true,
                Step::Clone => vm.cloned = true,
                Step::Set => vm.configured = true,
                Step::WaitForSlot => vm.slot_held = true,
                Step::Run => {
                    vm.process = Process::Running {
                        has_ip: false,
                        marked: false,
                    }
                }
                Step::WaitIp => {
                    vm.process = Process::Running {
                        has_ip: true,
                        marked: false,
                    }
                }
                Step::MarkRunning => vm.process = running().process,
                _ => break,
            }
        }
        use Step::*;
        assert_eq!(
            seen,
            vec![
                Pull,
                Clone,
                Set,
                WaitForSlot,
                Run,
                WaitIp,
                MarkRunning,
                Nothing
            ]
        );
    }

    #[test]
    fn a_cloned_vm_is_not_pulled_again() {
        let vm = VmFacts {
            cloned: true,
            ..Default::default()
        };
        assert_eq!(plan(&pod(), &vm, Instant::now()), Step::Set);
    }

    #[test]
    fn a_backoff_blocks_until_it_expires() {
        let now = Instant::now();
        let vm = VmFacts {
            blocked_until: Some(now + Duration::from_secs(7)),
            ..Default::default()
        };
        assert_eq!(plan(&pod(), &vm, now), Step::Wait(Duration::from_secs(7)));
        assert_eq!(plan(&pod(), &vm, now + Duration::from_secs(8)), Step::Pull);
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
        assert_eq!(plan(&with(Never), &exited(0), now), Step::Finish);
        assert_eq!(plan(&with(Never), &exited(1), now), Step::Finish);
        assert_eq!(plan(&with(OnFailure), &exited(0), now), Step::Finish);
        let ten = Step::Restart(Duration::from_secs(10));
        assert_eq!(plan(&with(OnFailure), &exited(1), now), ten);
        assert_eq!(plan(&with(Always), &exited(0), now), ten);
        let third = VmFacts {
            restarts: 2,
            ..exited(3)
        };
        assert_eq!(
            plan(&with(Always), &third, now),
            Step::Restart(Duration::from_secs(40))
        );
    }

    #[test]
    fn deletion_stops_then_deletes_then_releases_then_deletes_pod() {
        let now = Instant::now();
        let p = PodFacts {
            deleting: true,
            ..pod()
        };
        assert_eq!(plan(&p, &running(), now), Step::Stop);
        let stopped = VmFacts {
            process: Process::Exited { code: 0 },
            ..running()
        };
        assert_eq!(plan(&p, &stopped, now), Step::Delete);
        assert_eq!(plan(&p, &VmFacts::default(), now), Step::RemoveFinalizer);
        let released = PodFacts {
            has_finalizer: false,
            ..p
        };
        assert_eq!(plan(&released, &VmFacts::default(), now), Step::DeletePod);
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
        assert_eq!(plan(&p, &vm, now), Step::RemoveFinalizer);
    }

    #[test]
    fn node_gone_drops_the_finalizer_and_leaves_the_vm_alone() {
        let now = Instant::now();
        let p = PodFacts {
            node_gone: true,
            ..pod()
        };
        assert_eq!(plan(&p, &running(), now), Step::RemoveFinalizer);
        let released = PodFacts {
            has_finalizer: false,
            ..p.clone()
        };
        assert_eq!(plan(&released, &running(), now), Step::Nothing);
        // A deletion still tears down normally while we run.
        let deleting = PodFacts {
            deleting: true,
            ..p
        };
        assert_eq!(plan(&deleting, &running(), now), Step::Stop);
    }

    #[test]
    fn terminal_pods_are_left_alone() {
        let p = PodFacts {
            terminal: true,
            ..pod()
        };
        assert_eq!(plan(&p, &VmFacts::default(), Instant::now()), Step::Nothing);
    }

    #[test]
    fn crash_backoff_is_kubelets_10s_doubling_to_5m() {
        let s: Vec<u64> = (0..8).map(|n| crash_backoff(n).as_secs()).collect();
        assert_eq!(s, vec![10, 20, 40, 80, 160, 300, 300, 300]);
        assert_eq!(crash_backoff(u32::MAX).as_secs(), 300);
    }
}
