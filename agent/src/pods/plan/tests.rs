//! Table tests of the decision core: provisioning order, restarts, hooks, deletion.

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
fn provisioning_walks_pull_prepare_clone_set_slot_run_ip_mark() {
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
            Prepare,
            Clone,
            Set,
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
        prepared: true,
        ..Default::default()
    };
    assert_eq!(plan(&pod(), &vm, Instant::now()), vm_step(VmStep::Set));
}

#[test]
fn what_the_guest_reads_is_resolved_before_any_clone() {
    let now = Instant::now();
    let pulled = VmFacts {
        image_ready: true,
        ..Default::default()
    };
    assert_eq!(plan(&pod(), &pulled, now), vm_step(VmStep::Prepare));
    // A missing Secret: Prepare failed and backs off; still no clone meanwhile or after.
    let waiting = VmFacts {
        blocked_until: Some(now + Duration::from_secs(10)),
        ..pulled
    };
    assert_eq!(
        plan(&pod(), &waiting, now),
        vm_step(VmStep::Wait(Duration::from_secs(10)))
    );
    let later = now + Duration::from_secs(11);
    assert_eq!(plan(&pod(), &waiting, later), vm_step(VmStep::Prepare));
    // A VM found cloned after an agent restart is prepared again before it is configured.
    let found = VmFacts {
        image_ready: true,
        cloned: true,
        ..Default::default()
    };
    assert_eq!(plan(&pod(), &found, now), vm_step(VmStep::Prepare));
}

#[test]
fn a_deleted_pod_prepared_but_never_cloned_has_its_guest_directory_removed() {
    let deleting = PodFacts {
        deleting: true,
        ..pod()
    };
    let prepared = VmFacts {
        image_ready: true,
        prepared: true,
        ..Default::default()
    };
    assert_eq!(
        plan(&deleting, &prepared, Instant::now()),
        vm_step(VmStep::Delete)
    );
    let nothing = VmFacts::default();
    assert_eq!(
        plan(&deleting, &nothing, Instant::now()),
        pod_step(PodStep::RemoveFinalizer)
    );
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
        agent_killed: true,
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
fn a_post_start_hook_runs_once_the_guest_has_an_ip_and_before_it_is_marked() {
    let now = Instant::now();
    let p = PodFacts {
        post_start: true,
        ..pod()
    };
    let at = |has_ip, marked, post_started| VmFacts {
        process: Process::Running { has_ip, marked },
        post_started,
        ..running()
    };
    let cases = [
        (at(false, false, false), VmStep::WaitIp),
        (at(true, false, false), VmStep::PostStart),
        (at(true, false, true), VmStep::MarkRunning),
        (at(true, true, true), VmStep::Idle),
    ];
    for (vm, want) in cases {
        assert_eq!(plan(&p, &vm, now), vm_step(want), "{vm:?}");
    }
    assert_eq!(
        plan(&pod(), &at(true, false, false), now),
        vm_step(VmStep::MarkRunning),
        "no hook, nothing to wait for"
    );
}

#[test]
fn a_deletion_runs_pre_stop_then_waits_while_the_job_is_busy_then_stops() {
    let now = Instant::now();
    let s = Duration::from_secs;
    let deleting = |pre_stop| PodFacts {
        deleting: true,
        pre_stop,
        ..pod()
    };
    let vm = |pre_stopped, busy, deadline| VmFacts {
        job_busy: busy,
        termination: Some(Termination {
            deadline,
            pre_stopped,
        }),
        ..running()
    };
    let cases = [
        // (has preStop, preStop ran, busy, deadline, step)
        (true, false, true, now + s(60), VmStep::PreStop),
        (true, false, false, now, VmStep::PreStop),
        (true, true, true, now + s(60), VmStep::WaitForJob(s(60))),
        (false, false, true, now + s(5), VmStep::WaitForJob(s(5))),
        (true, true, false, now + s(60), VmStep::Stop),
        (false, false, false, now + s(60), VmStep::Stop),
        (true, true, true, now, VmStep::Stop),
        (false, false, true, now - s(1), VmStep::Stop),
    ];
    for (pre_stop, pre_stopped, busy, deadline, want) in cases {
        let got = plan(&deleting(pre_stop), &vm(pre_stopped, busy, deadline), now);
        assert_eq!(got, vm_step(want), "{pre_stop} {pre_stopped} {busy}");
    }
    let gone = VmFacts {
        process: Process::Exited { code: 0 },
        ..vm(false, true, now + s(60))
    };
    assert_eq!(
        plan(&deleting(true), &gone, now),
        vm_step(VmStep::Delete),
        "a VM that is gone is not waited for, nor its preStop run"
    );
}

#[test]
fn crash_backoff_is_kubelets_10s_doubling_to_5m() {
    let s: Vec<u64> = (0..8).map(|n| crash_backoff(n).as_secs()).collect();
    assert_eq!(s, vec![10, 20, 40, 80, 160, 300, 300, 300]);
    assert_eq!(crash_backoff(u32::MAX).as_secs(), 300);
}
