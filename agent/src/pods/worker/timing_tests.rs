//! The worker's timing on a paused tokio clock: retry backoff, crash-loop backoff, and which
//! Pod a state change wakes. Virtual time advances only while every task waits, so these tests
//! take milliseconds and assert the exact delays.

use tokio::time::Instant;

use super::test_support::*;

#[tokio::test(start_paused = true)]
async fn a_failed_start_backs_off_ten_seconds_then_runs() {
    let mut r = rig(MemTart::new(), 2);
    r.tart.fail(Op::Run, ErrorKind::Other);
    let vm = VmNaming::default().vm_name(&uid(21)).unwrap();
    let t0 = Instant::now();
    let mut h = spawn(
        r.worker.clone(),
        vm,
        input(&uid(21), RestartPolicy::Always),
        Start::Fresh,
        0,
    );
    let failed = within(&mut h, Duration::from_secs(1), "create error", |s| {
        waiting_for(s, WaitingReason::CreateContainerError)
    })
    .await;
    let until = failed.facts.blocked_until.expect("a backoff");
    assert_eq!(
        until - t0,
        Duration::from_secs(10),
        "kubelet's first backoff"
    );
    let s = within(&mut h, Duration::from_secs(60), "running", running_with_ip).await;
    let took = t0.elapsed();
    assert!(
        took >= Duration::from_secs(10) && took < Duration::from_secs(11),
        "retried after {took:?}"
    );
    assert_eq!(r.tart.calls_of(Op::Run).len(), 2);
    assert!(r.reasons().contains(&"Failed".to_string()));
    assert_eq!(s.facts.restarts, 0, "a failed start is not a restart");
}

#[tokio::test(start_paused = true)]
async fn a_crash_loop_waits_10s_then_20s_between_runs() {
    let r = rig(MemTart::new(), 2);
    let vm = VmNaming::default().vm_name(&uid(22)).unwrap();
    let mut h = spawn(
        r.worker.clone(),
        vm.clone(),
        input(&uid(22), RestartPolicy::Always),
        Start::Fresh,
        0,
    );
    within(&mut h, Duration::from_secs(1), "running", running_with_ip).await;
    let mut waits = vec![];
    for n in 1..=2u32 {
        assert!(r.tart.exit_vm(&vm, 1));
        let exited = Instant::now();
        let s = within(&mut h, Duration::from_secs(1), "backoff", |s| {
            waiting_for(s, WaitingReason::CrashLoopBackOff) && s.facts.restarts == n
        })
        .await;
        assert!(s.last_terminated.is_some());
        within(&mut h, Duration::from_secs(600), "running again", |s| {
            running_with_ip(s) && s.facts.restarts == n
        })
        .await;
        waits.push(exited.elapsed().as_secs());
    }
    assert_eq!(waits, [10, 20], "kubelet's crash-loop curve");
    assert_eq!(r.tart.calls_of(Op::Run).len(), 3);
}

#[tokio::test(start_paused = true)]
async fn a_state_change_wakes_only_its_own_pod() {
    let mut r = rig(MemTart::new(), 2);
    let vm = VmNaming::default().vm_name(&uid(23)).unwrap();
    let mut i = input(&uid(23), RestartPolicy::Always);
    i.obj.name = Some("runner-23".into());
    i.obj.namespace = Some("ci".into());
    let mut h = spawn(r.worker.clone(), vm, i, Start::Fresh, 0);
    within(&mut h, Duration::from_secs(1), "running", running_with_ip).await;
    let mut woken = vec![];
    while let Ok(o) = r.wakes.try_recv() {
        woken.push((o.namespace.unwrap_or_default(), o.name));
    }
    assert!(!woken.is_empty(), "no wake-up at all");
    assert!(
        woken
            .iter()
            .all(|w| *w == ("ci".to_string(), "runner-23".to_string())),
        "{woken:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn an_adopted_vm_that_exits_is_prepared_again_before_its_restart() {
    let r = rig(MemTart::new().with_cached(IMAGE), 2);
    let vm = VmNaming::default().vm_name(&uid(24)).unwrap();
    r.tart.clone_vm(IMAGE, &vm, None).await.unwrap();
    let proc = r.tart.run(&vm, &r.worker.cfg.run_opts(&vm)).await.unwrap();
    let guard = r.worker.slots.acquire_for_adopted(&uid(24));
    let mut h = spawn(
        r.worker.clone(),
        vm.clone(),
        input(&uid(24), RestartPolicy::Always),
        Start::Adopted {
            vm: proc,
            slot: guard,
            started_at: None,
        },
        0,
    );
    within(&mut h, Duration::from_secs(5), "running", running_with_ip).await;
    let control = r._guest_dir.path().join(vm.to_string()).join("control");
    assert!(
        !control.exists(),
        "an adopted VM's shares are not rewritten"
    );
    assert!(r.tart.exit_vm(&vm, 1));
    let s = within(&mut h, Duration::from_secs(60), "restarted", |s| {
        s.facts.restarts == 1 && running_with_ip(s)
    })
    .await;
    assert!(s.facts.prepared);
    assert!(
        control.join("version").exists(),
        "prepared before the restart"
    );
    assert_eq!(r.tart.calls_of(Op::Run).len(), 2);
}
