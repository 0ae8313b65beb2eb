//! Hooks and termination through the worker on a paused clock, against `MemTart`'s scripted
//! `tart exec`: a failed `postStart` is `FailedPostStartHook` and a restart, a `postStart`
//! holds `started` and `ready`, `preStop` runs first on deletion, a busy job is waited for
//! until it marks itself idle or the grace runs out, each with its one event.

use tart::ExecOutput;

use super::test_support::*;
use super::*;
use crate::guest_contract::job::JobActivity;

fn hooked(uid: &str, policy: RestartPolicy, lifecycle: serde_json::Value) -> WorkerInput {
    let pod = crate::pods::fixtures::test_pod()
        .uid(uid)
        .merge_container(serde_json::json!({ "lifecycle": lifecycle }))
        .build();
    let mut i = WorkerInput {
        pod: PodSnapshot(Arc::new(pod)),
        ..input(uid, policy)
    };
    i.facts.post_start = lifecycle.get("postStart").is_some();
    i.facts.pre_stop = lifecycle.get("preStop").is_some();
    i
}

fn exec_exits(r: &crate::pods::fixtures::Rig, code: i32) {
    r.tart.set_exec_output(ExecOutput {
        exit_code: code,
        stdout: "hook out\n".into(),
        stderr: String::new(),
    });
}

fn count(reasons: &[String], reason: &str) -> usize {
    reasons.iter().filter(|r| *r == reason).count()
}

/// Mark the job in the VM's status share, as the guest's job does.
fn mark(r: &crate::pods::fixtures::Rig, vm: &VmName, word: &str) {
    let status = r.worker.cfg.guest.layout.status(vm);
    std::fs::write(status.join("job"), format!("{word}\n")).unwrap();
}

fn delete(h: &WorkerHandle, grace: Duration) {
    let mut del = h.input.borrow().clone();
    del.facts.deleting = true;
    del.grace = grace;
    h.input.send_replace(del);
}

fn gone(s: &WorkerState) -> bool {
    !s.facts.cloned && s.facts.finished
}

#[tokio::test(start_paused = true)]
async fn a_failed_post_start_hook_is_a_warning_a_kill_and_a_restart() {
    let mut r = rig(MemTart::new(), 2);
    exec_exits(&r, 1);
    let vm = VmNaming::default().vm_name(&uid(60)).unwrap();
    let lc = serde_json::json!({"postStart": {"exec": {"command": ["sh", "-c", "exit 1"]}}});
    let mut h = spawn(
        r.worker.clone(),
        vm,
        hooked(&uid(60), RestartPolicy::OnFailure, lc),
        Start::Fresh,
        0,
    );
    let s = until(&mut h, "restarting", |s| s.facts.restarts == 1).await;
    let t = s.last_terminated.expect("the killed run");
    assert_eq!(
        (t.exit_code, t.reason.as_str()),
        (143, "Error"),
        "the guest shut down: the job got SIGTERM"
    );
    let msg = t.message.unwrap_or_default();
    assert!(
        msg.starts_with("Exec lifecycle hook ([sh -c exit 1]) for Container \"vm\""),
        "{msg}"
    );
    assert_eq!(r.tart.calls_of(Op::Stop).len(), 1);
    let reasons = r.reasons();
    assert_eq!(count(&reasons, "FailedPostStartHook"), 1, "{reasons:?}");
    let failed = reasons.iter().position(|e| e == "FailedPostStartHook");
    let killing = reasons.iter().position(|e| e == "Killing");
    assert!(failed < killing, "{reasons:?}");
}

#[tokio::test(start_paused = true)]
async fn a_post_start_hook_holds_started_and_ready_until_it_completes() {
    let r = rig(MemTart::new(), 2);
    r.tart.set_latency(Op::Exec, Duration::from_secs(30));
    let vm = VmNaming::default().vm_name(&uid(61)).unwrap();
    let lc = serde_json::json!({"postStart": {"exec": {"command": ["register-runner"]}}});
    let mut h = spawn(
        r.worker.clone(),
        vm,
        hooked(&uid(61), RestartPolicy::Always, lc),
        Start::Fresh,
        0,
    );
    until(&mut h, "an IP", |s| s.pod_ip.is_some()).await;
    tokio::time::sleep(Duration::from_secs(20)).await;
    let s = h.state.borrow().clone();
    assert!(
        matches!(
            s.view,
            ContainerView::Running {
                started: false,
                ready: false,
                ..
            }
        ),
        "neither started nor ready while the hook runs: {:?}",
        s.view
    );
    let s = within(&mut h, Duration::from_secs(15), "ready", running_with_ip).await;
    assert!(matches!(s.view, ContainerView::Running { ready: true, .. }));
    assert!(s.facts.post_started);
    assert_eq!(r.tart.calls_of(Op::Exec).len(), 1, "the hook runs once");
}

#[tokio::test(start_paused = true)]
async fn a_deleted_busy_job_runs_pre_stop_then_is_waited_for_until_it_marks_itself_idle() {
    let mut r = rig(MemTart::new(), 2);
    let vm = VmNaming::default().vm_name(&uid(62)).unwrap();
    let lc = serde_json::json!({"preStop": {"exec": {"command": ["unregister"]}}});
    let mut h = spawn(
        r.worker.clone(),
        vm.clone(),
        hooked(&uid(62), RestartPolicy::Always, lc),
        Start::Fresh,
        0,
    );
    until(&mut h, "running", running_with_ip).await;
    assert_eq!(
        r.tart.calls_of(Op::Exec).len(),
        0,
        "no hook before deletion"
    );
    mark(&r, &vm, "busy");
    until(&mut h, "busy", |s| s.job == Some(JobActivity::Busy)).await;
    let deleted_at = tokio::time::Instant::now();
    delete(&h, Duration::from_secs(60));
    tokio::time::sleep(Duration::from_secs(20)).await;
    assert_eq!(r.tart.calls_of(Op::Exec).len(), 1, "preStop ran once");
    assert!(r.tart.calls_of(Op::Stop).is_empty(), "stopped a busy job");
    mark(&r, &vm, "idle");
    until(&mut h, "deleted", gone).await;
    let took = deleted_at.elapsed();
    assert!(
        took >= Duration::from_secs(20) && took < Duration::from_secs(23),
        "{took:?}"
    );
    let reasons = r.reasons();
    assert_eq!(count(&reasons, "WaitingForJob"), 1, "{reasons:?}");
    assert_eq!(count(&reasons, "GracePeriodExpired"), 0, "{reasons:?}");
    assert_eq!(count(&reasons, "Killing"), 1, "{reasons:?}");
    let t = r.metrics();
    assert!(
        t.contains(r#"tart_kubelet_pod_termination_seconds_count{how="waited"} 1"#),
        "{t}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_job_busy_past_the_grace_is_stopped_when_it_runs_out_with_one_event() {
    let mut r = rig(MemTart::new(), 2);
    let vm = VmNaming::default().vm_name(&uid(63)).unwrap();
    let mut h = spawn(
        r.worker.clone(),
        vm.clone(),
        input(&uid(63), RestartPolicy::Always),
        Start::Fresh,
        0,
    );
    until(&mut h, "running", running_with_ip).await;
    mark(&r, &vm, "busy");
    until(&mut h, "busy", |s| s.job == Some(JobActivity::Busy)).await;
    let deleted_at = tokio::time::Instant::now();
    delete(&h, Duration::from_secs(5));
    within(&mut h, Duration::from_secs(10), "deleted", gone).await;
    let took = deleted_at.elapsed();
    assert!(
        took >= Duration::from_secs(5) && took < Duration::from_secs(7),
        "{took:?}"
    );
    let reasons = r.reasons();
    assert_eq!(count(&reasons, "WaitingForJob"), 1, "{reasons:?}");
    assert_eq!(count(&reasons, "GracePeriodExpired"), 1, "{reasons:?}");
    let t = r.metrics();
    assert!(
        t.contains(r#"tart_kubelet_pod_termination_seconds_count{how="grace_expired"} 1"#),
        "{t}"
    );
}

#[tokio::test(start_paused = true)]
async fn an_idle_pod_stops_at_once_and_a_failed_pre_stop_is_a_warning_not_a_hang() {
    let mut r = rig(MemTart::new(), 2);
    exec_exits(&r, 1);
    let vm = VmNaming::default().vm_name(&uid(64)).unwrap();
    let lc = serde_json::json!({"preStop": {"exec": {"command": ["false"]}}});
    let mut h = spawn(
        r.worker.clone(),
        vm.clone(),
        hooked(&uid(64), RestartPolicy::Always, lc),
        Start::Fresh,
        0,
    );
    until(&mut h, "running", running_with_ip).await;
    mark(&r, &vm, "idle");
    until(&mut h, "idle", |s| s.job == Some(JobActivity::Idle)).await;
    let deleted_at = tokio::time::Instant::now();
    delete(&h, Duration::from_secs(60));
    until(&mut h, "deleted", gone).await;
    assert!(deleted_at.elapsed() < Duration::from_secs(1));
    let reasons = r.reasons();
    assert_eq!(count(&reasons, "FailedPreStopHook"), 1, "{reasons:?}");
    assert_eq!(count(&reasons, "WaitingForJob"), 0, "{reasons:?}");
    let t = r.metrics();
    assert!(
        t.contains(r#"tart_kubelet_pod_termination_seconds_count{how="idle"} 1"#),
        "{t}"
    );
}
