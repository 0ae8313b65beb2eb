//! The worker against `MemTart`: provisioning order, events, once-per-Pod histograms, host
//! faults, slots, teardown and adoption. No API server: events go to a channel.

use super::test_support::*;

#[tokio::test]
async fn a_fresh_pod_is_provisioned_in_order_and_counted_once() {
    let mut r = rig(MemTart::new(), 2);
    let vm = VmNaming::default().vm_name(&uid(1)).unwrap();
    let mut h = spawn(
        r.worker.clone(),
        vm.clone(),
        input(&uid(1), RestartPolicy::Always),
        Start::Fresh,
        0,
    );
    let s = until(&mut h, "running with an IP", running_with_ip).await;
    assert!(matches!(s.view, ContainerView::Running { ready: true, .. }));
    assert_eq!(
        s.image_id.as_deref(),
        Some(
            format!(
                "ghcr.io/cirruslabs/macos@{}",
                tart::testing::fake_digest(IMAGE)
            )
            .as_str()
        ),
        "imageID from the cached tag's digest"
    );
    assert_eq!(
        r.reasons(),
        ["CreatingVM", "Pulling", "Pulled", "Created", "Started"]
    );
    let ops: Vec<Op> = r.tart.calls().iter().map(|c| c.op).collect();
    let pos = |op| ops.iter().position(|o| *o == op).unwrap();
    assert!(pos(Op::Pull) < pos(Op::Clone) && pos(Op::Clone) < pos(Op::Set));
    assert!(pos(Op::Set) < pos(Op::Run) && pos(Op::Run) < pos(Op::Ip));
    let t = r.metrics();
    assert!(
        t.contains("tart_kubelet_pod_provision_delay_seconds_count 1"),
        "{t}"
    );
    assert!(t.contains("tart_kubelet_vm_boot_duration_seconds_count 1"));
    assert!(
        t.contains("tart_kubelet_pod_agent_overhead_seconds_count 1"),
        "a clean first start measures the agent's overhead once: {t}"
    );
    assert!(r.worker.slots.holds(&uid(1)));
}

#[tokio::test]
async fn exit_zero_under_never_finishes_completed_and_frees_the_slot() {
    let r = rig(MemTart::new(), 2);
    let vm = VmNaming::default().vm_name(&uid(2)).unwrap();
    let mut h = spawn(
        r.worker.clone(),
        vm.clone(),
        input(&uid(2), RestartPolicy::Never),
        Start::Fresh,
        0,
    );
    until(&mut h, "running", running_with_ip).await;
    assert!(r.tart.exit_vm(&vm, 0));
    let s = until(&mut h, "finished", |s| s.facts.finished).await;
    match s.view {
        ContainerView::Terminated(t) => {
            assert_eq!((t.exit_code, t.reason.as_str()), (0, "Completed"));
        }
        v => panic!("not terminated: {v:?}"),
    }
    assert!(!r.worker.slots.holds(&uid(2)));
    assert_eq!(r.tart.calls_of(Op::Run).len(), 1, "restarted under Never");
}

#[tokio::test]
async fn vm_limit_at_run_is_a_host_fault_that_keeps_the_pod_waiting() {
    let mut r = rig(MemTart::new(), 2);
    r.tart.fail(Op::Run, ErrorKind::VmLimit);
    let vm = VmNaming::default().vm_name(&uid(3)).unwrap();
    let mut h = spawn(
        r.worker.clone(),
        vm,
        input(&uid(3), RestartPolicy::Always),
        Start::Fresh,
        0,
    );
    let s = until(&mut h, "host fault", |s| {
        waiting_for(s, WaitingReason::HostFault(ErrorKind::VmLimit))
    })
    .await;
    assert!(s.facts.blocked_until.is_some(), "no backoff");
    assert!(!s.facts.slot_held, "slot kept after a failed start");
    assert!(r.reasons().contains(&"VMLimitReached".to_string()));
    assert!(
        r.worker.health.snapshot().fault.is_some(),
        "not reported to HostHealth"
    );
    assert!(
        r.metrics()
            .contains("tart_kubelet_host_faults_total{kind=\"vm_limit\"} 1")
    );
}

/// A pull that fails for the workload's reasons: ErrImagePull (then ImagePullBackOff), a
/// Warning `Failed`, and nothing reported against the host.
async fn pull_failure_is_err_image_pull_not_a_host_fault(tart: MemTart, n: u8) {
    let mut r = rig(tart, 2);
    let vm = VmNaming::default().vm_name(&uid(n)).unwrap();
    let mut h = spawn(
        r.worker.clone(),
        vm,
        input(&uid(n), RestartPolicy::Always),
        Start::Fresh,
        0,
    );
    until(&mut h, "ErrImagePull", |s| {
        waiting_for(s, WaitingReason::ErrImagePull)
            || waiting_for(s, WaitingReason::ImagePullBackOff)
    })
    .await;
    let evs = r.reasons();
    assert!(evs.contains(&"Failed".to_string()), "{evs:?}");
    assert!(
        r.worker.health.snapshot().fault.is_none(),
        "reported against the host"
    );
    let t = r.metrics();
    let counted: Vec<&str> = t
        .lines()
        .filter(|l| l.starts_with("tart_kubelet_host_faults_total{") && !l.ends_with(" 0"))
        .collect();
    assert!(counted.is_empty(), "{counted:?}");
}

#[tokio::test]
async fn a_missing_image_is_err_image_pull_not_a_host_fault() {
    pull_failure_is_err_image_pull_not_a_host_fault(MemTart::new().with_registry([]), 4).await;
}

#[tokio::test]
async fn a_denied_registry_login_is_err_image_pull_not_a_host_fault() {
    let tart = MemTart::new();
    tart.fail(Op::Pull, ErrorKind::Auth);
    pull_failure_is_err_image_pull_not_a_host_fault(tart, 12).await;
}

#[tokio::test]
async fn a_second_pod_waits_for_the_only_slot_and_runs_when_it_frees() {
    let mut r = rig(MemTart::new(), 1);
    let vm1 = VmNaming::default().vm_name(&uid(5)).unwrap();
    let vm2 = VmNaming::default().vm_name(&uid(6)).unwrap();
    let mut h1 = spawn(
        r.worker.clone(),
        vm1.clone(),
        input(&uid(5), RestartPolicy::Never),
        Start::Fresh,
        0,
    );
    until(&mut h1, "first running", running_with_ip).await;
    let mut h2 = spawn(
        r.worker.clone(),
        vm2,
        input(&uid(6), RestartPolicy::Never),
        Start::Fresh,
        0,
    );
    until(&mut h2, "second waiting for a slot", |s| {
        waiting_for(s, WaitingReason::WaitingForVmSlot)
    })
    .await;
    assert!(r.reasons().contains(&"WaitingForVMSlot".to_string()));
    r.tart.exit_vm(&vm1, 0);
    until(&mut h2, "second running", running_with_ip).await;
}

#[tokio::test]
async fn deletion_stops_then_deletes_the_vm() {
    let mut r = rig(MemTart::new(), 2);
    let vm = VmNaming::default().vm_name(&uid(7)).unwrap();
    let i = input(&uid(7), RestartPolicy::Always);
    let mut h = spawn(r.worker.clone(), vm.clone(), i.clone(), Start::Fresh, 0);
    until(&mut h, "running", running_with_ip).await;
    let mut del = i;
    del.facts.deleting = true;
    h.input.send_replace(del);
    until(&mut h, "deleted", |s| !s.facts.cloned && s.facts.finished).await;
    assert!(!r.tart.vm_names().contains(&vm.to_string()));
    assert_eq!(r.tart.calls_of(Op::Stop).len(), 1);
    assert!(r.reasons().contains(&"Killing".to_string()));
    assert!(!r.worker.slots.holds(&uid(7)));
}

#[tokio::test(start_paused = true)]
async fn a_run_that_ends_after_a_failed_stop_is_still_the_agents_kill() {
    let r = rig(MemTart::new(), 2);
    let vm = VmNaming::default().vm_name(&uid(8)).unwrap();
    let i = input(&uid(8), RestartPolicy::Never);
    let mut h = spawn(r.worker.clone(), vm.clone(), i.clone(), Start::Fresh, 0);
    until(&mut h, "running", running_with_ip).await;
    r.tart.fail(Op::Stop, ErrorKind::Timeout);
    let mut del = i;
    del.facts.deleting = true;
    h.input.send_replace(del);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while r.tart.calls_of(Op::Stop).is_empty() {
        assert!(tokio::time::Instant::now() < deadline, "no stop");
        tokio::task::yield_now().await;
    }
    // The VM goes down on its own before the stop is retried, with `tart run` exiting 0.
    assert!(r.tart.exit_vm(&vm, 0));
    let s = until(&mut h, "terminated", |s| {
        matches!(s.view, ContainerView::Terminated(_))
    })
    .await;
    let ContainerView::Terminated(t) = s.view else {
        unreachable!()
    };
    assert_eq!((t.exit_code, t.reason.as_str()), (137, "Error"));
}

#[tokio::test]
async fn an_adopted_vm_is_never_run_again_nor_counted() {
    let r = rig(MemTart::new().with_cached(IMAGE), 2);
    let vm = VmNaming::default().vm_name(&uid(8)).unwrap();
    r.tart.clone_vm(IMAGE, &vm, None).await.unwrap();
    let proc = r.tart.run(&vm, &r.worker.cfg.run_opts(&vm)).await.unwrap();
    let guard = r.worker.slots.acquire_for_adopted(&uid(8));
    let mut h = spawn(
        r.worker.clone(),
        vm,
        input(&uid(8), RestartPolicy::Always),
        Start::Adopted {
            vm: proc,
            slot: guard,
            started_at: None,
        },
        0,
    );
    let s = until(&mut h, "running with an IP", running_with_ip).await;
    assert!(s.adopted);
    assert_eq!(
        r.tart.calls_of(Op::Run).len(),
        1,
        "adopted VM started again"
    );
    let t = r.metrics();
    assert!(
        t.contains("tart_kubelet_pod_provision_delay_seconds_count 0"),
        "{t}"
    );
    assert!(t.contains("tart_kubelet_vm_boot_duration_seconds_count 0"));
    assert!(t.contains("tart_kubelet_pod_agent_overhead_seconds_count 0"));
}

#[tokio::test]
async fn a_vm_that_stopped_while_the_agent_was_away_is_not_run_again_under_never() {
    let r = rig(MemTart::new().with_cached(IMAGE), 2);
    let vm = VmNaming::default().vm_name(&uid(9)).unwrap();
    r.tart.clone_vm(IMAGE, &vm, None).await.unwrap();
    let i = input(&uid(9), RestartPolicy::Never);
    let mut h = spawn(r.worker.clone(), vm, i, Start::ExitedUnwatched, 0);
    let s = until(&mut h, "finished", |s| s.facts.finished).await;
    match s.view {
        ContainerView::Terminated(t) => {
            assert_eq!(
                (t.exit_code, t.reason.as_str()),
                (137, "ContainerStatusUnknown")
            );
        }
        v => panic!("not terminated: {v:?}"),
    }
    assert!(
        r.tart.calls_of(Op::Run).is_empty(),
        "started again under Never"
    );
}

#[tokio::test]
async fn restart_count_survives_an_agent_restart() {
    let r = rig(MemTart::new().with_cached(IMAGE), 2);
    let vm = VmNaming::default().vm_name(&uid(10)).unwrap();
    r.tart.clone_vm(IMAGE, &vm, None).await.unwrap();
    let i = input(&uid(10), RestartPolicy::Always);
    let mut h = spawn(r.worker.clone(), vm, i, Start::ExitedUnwatched, 2);
    let s = until(&mut h, "crash-loop backoff", |s| {
        waiting_for(s, WaitingReason::CrashLoopBackOff)
    })
    .await;
    assert_eq!(s.facts.restarts, 3);
    assert_eq!(s.last_terminated.map(|t| t.exit_code), Some(137));
    match s.view {
        ContainerView::Waiting { message, .. } => {
            assert!(message.unwrap_or_default().contains("back-off 40s"));
        }
        v => panic!("{v:?}"),
    }
}

#[tokio::test]
async fn a_fault_after_a_successful_start_is_a_new_event_not_a_repeat() {
    // The backoff counter resets when a run starts; the event keys must not, or the first
    // fault after a crash-loop restart would be dropped as a repeat of one before the start.
    let mut r = rig(MemTart::new(), 2);
    let vm = VmNaming::default().vm_name(&uid(11)).unwrap();
    let i = input(&uid(11), RestartPolicy::Always);
    let (_in, rx) = watch::channel(i.clone());
    let mut w = Worker::new(r.worker.clone(), vm, rx, Start::Fresh, 0);
    w.fail_with(&i, Failure::Create, ErrorKind::VmLimit, "limit".into());
    w.fail_with(&i, Failure::Create, ErrorKind::Other, "boom".into());
    w.fail_with(&i, Failure::Image, ErrorKind::NotFound, "404".into());
    w.failures = 0; // what a successful `tart run` does
    w.fail_with(&i, Failure::Create, ErrorKind::VmLimit, "limit".into());
    w.fail_with(&i, Failure::Create, ErrorKind::Other, "boom".into());
    w.fail_with(&i, Failure::Image, ErrorKind::NotFound, "404".into());
    let evs = r.reasons();
    let count = |reason: &str| evs.iter().filter(|e| *e == reason).count();
    assert_eq!(count("VMLimitReached"), 2, "{evs:?}");
    assert_eq!(count("Failed"), 4, "{evs:?}");
    assert_eq!(w.failures, 3, "backoff counts only since the last start");
}

#[tokio::test]
async fn without_its_vm_profile_the_vm_is_not_run_and_it_runs_once_the_profile_is_known() {
    let mut r = rig(MemTart::new(), 2);
    let vm = VmNaming::default().vm_name(&uid(40)).unwrap();
    let mut first = input(&uid(40), RestartPolicy::Always);
    first.profile = Err(crate::pods::profile::ProfileWait::ClassNotFound {
        class: "isolated".into(),
    });
    let mut h = spawn(r.worker.clone(), vm.clone(), first.clone(), Start::Fresh, 0);
    let s = until(&mut h, "waiting for the profile", |s| {
        s.view.waiting_message() == Some("runtimeclass.node.k8s.io \"isolated\" not found")
    })
    .await;
    assert!(waiting_for(&s, WaitingReason::ContainerCreating));
    assert!(
        r.tart.calls_of(Op::Run).is_empty(),
        "no VM run without its profile"
    );
    assert!(
        !r.worker.slots.holds(&uid(40)),
        "no slot is held while waiting"
    );
    assert!(r.reasons().contains(&"FailedCreatePodSandBox".to_owned()));
    h.input.send_modify(|i| i.profile = Ok(Default::default()));
    until(&mut h, "running with an IP", running_with_ip).await;
    assert_eq!(r.tart.calls_of(Op::Run), [vm.to_string()]);
}
