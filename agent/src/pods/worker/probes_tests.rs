//! Probes through the worker on a paused clock, against `MemTart`'s scripted `tart exec`: the
//! readiness probe holds `ready`, a failed liveness probe stops the VM and the restart policy
//! starts it again, and a Pod without probes is ready with its IP.

use tart::ExecOutput;

use super::test_support::*;
use super::*;

fn probed(uid: &str, policy: RestartPolicy, container: serde_json::Value) -> WorkerInput {
    let pod = crate::pods::fixtures::test_pod()
        .uid(uid)
        .merge_container(container)
        .build();
    WorkerInput {
        pod: PodSnapshot(Arc::new(pod)),
        ..input(uid, policy)
    }
}

fn exec_exits(r: &crate::pods::fixtures::Rig, code: i32) {
    r.tart.set_exec_output(ExecOutput {
        exit_code: code,
        stdout: if code == 0 {
            String::new()
        } else {
            "not yet\n".into()
        },
        stderr: String::new(),
    });
}

fn ready(s: &WorkerState) -> bool {
    matches!(s.view, ContainerView::Running { ready: true, .. })
}

#[tokio::test(start_paused = true)]
async fn a_readiness_probe_holds_ready_until_it_passes() {
    let mut r = rig(MemTart::new(), 2);
    exec_exits(&r, 1);
    let vm = VmNaming::default().vm_name(&uid(40)).unwrap();
    let probe = serde_json::json!({"readinessProbe": {
        "exec": {"command": ["test", "-f", "/tmp/ready"]}, "periodSeconds": 2}});
    let mut h = spawn(
        r.worker.clone(),
        vm,
        probed(&uid(40), RestartPolicy::Always, probe),
        Start::Fresh,
        0,
    );
    let s = within(&mut h, Duration::from_secs(1), "running", running_with_ip).await;
    assert!(!ready(&s), "not ready before a passing probe: {:?}", s.view);
    // Several failing periods: still not ready, one Unhealthy event per attempt.
    tokio::time::sleep(Duration::from_secs(7)).await;
    assert!(!ready(&h.state.borrow()));
    let unhealthy = r.reasons().iter().filter(|e| *e == "Unhealthy").count();
    assert!(unhealthy >= 3, "{:?}", r.reasons());
    exec_exits(&r, 0);
    within(&mut h, Duration::from_secs(3), "ready", ready).await;
    let t = r.metrics();
    assert!(
        t.contains(r#"tart_kubelet_probe_results_total{probe="readiness",result="success"} 1"#),
        "{t}"
    );
    assert!(
        !r.tart.calls_of(Op::Stop).iter().any(|_| true),
        "a readiness failure never stops the VM"
    );
}

#[tokio::test(start_paused = true)]
async fn a_failed_liveness_probe_stops_the_vm_and_on_failure_restarts_it_even_after_exit_0() {
    let mut r = rig(MemTart::new(), 2);
    exec_exits(&r, 0);
    let vm = VmNaming::default().vm_name(&uid(41)).unwrap();
    let probe = serde_json::json!({"livenessProbe": {
        "exec": {"command": ["pgrep", "runner"]}, "periodSeconds": 1, "failureThreshold": 2}});
    let mut h = spawn(
        r.worker.clone(),
        vm.clone(),
        probed(&uid(41), RestartPolicy::OnFailure, probe),
        Start::Fresh,
        0,
    );
    let s = within(&mut h, Duration::from_secs(1), "running", running_with_ip).await;
    assert!(ready(&s), "liveness starts out passing; no readiness probe");
    exec_exits(&r, 1);
    // MemTart's stop is a guest shutdown after which `tart run` exits 0; the job got SIGTERM.
    let s = within(&mut h, Duration::from_secs(10), "restarting", |s| {
        s.facts.restarts == 1
    })
    .await;
    assert_eq!(r.tart.calls_of(Op::Stop).len(), 1);
    let t = s.last_terminated.expect("the killed run");
    assert_eq!((t.exit_code, t.reason.as_str()), (143, "Error"));
    let reasons = r.reasons();
    let kill = reasons
        .iter()
        .position(|e| e == "Killing")
        .expect("Killing");
    let unhealthy = reasons
        .iter()
        .position(|e| e == "Unhealthy")
        .expect("Unhealthy");
    assert!(unhealthy < kill, "{reasons:?}");
    exec_exits(&r, 0);
    let s = within(
        &mut h,
        Duration::from_secs(60),
        "running again",
        running_with_ip,
    )
    .await;
    assert_eq!(s.facts.restarts, 1);
    assert!(!s.facts.agent_killed, "the new run starts clean");
    assert_eq!(r.tart.calls_of(Op::Run).len(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_startup_probe_holds_started_and_gates_liveness() {
    let r = rig(MemTart::new(), 2);
    exec_exits(&r, 1);
    let vm = VmNaming::default().vm_name(&uid(42)).unwrap();
    let probe = serde_json::json!({
        "startupProbe": {"exec": {"command": ["booted"]}, "periodSeconds": 1, "failureThreshold": 100},
        "livenessProbe": {"exec": {"command": ["alive"]}, "periodSeconds": 1, "failureThreshold": 1}});
    let mut h = spawn(
        r.worker.clone(),
        vm,
        probed(&uid(42), RestartPolicy::Always, probe),
        Start::Fresh,
        0,
    );
    let s = within(&mut h, Duration::from_secs(1), "running", running_with_ip).await;
    assert!(matches!(
        s.view,
        ContainerView::Running {
            started: false,
            ready: false,
            ..
        }
    ));
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(
        r.tart.calls_of(Op::Stop).is_empty(),
        "liveness does not run before the startup probe passes"
    );
    exec_exits(&r, 0);
    within(&mut h, Duration::from_secs(3), "started and ready", |s| {
        matches!(
            s.view,
            ContainerView::Running {
                started: true,
                ready: true,
                ..
            }
        )
    })
    .await;
}
