//! End to end on the real control plane: readiness, liveness and startup probes run for real.
//! fake-tart gives each VM a loopback address whose HTTP/TCP endpoints the test makes healthy,
//! failing or closed, and runs `tart exec` commands as real processes in the guest.

use crate::pod_support;

use std::time::Duration;

use k8s_openapi::api::core::v1::{Pod, Probe};
use pod_support::{Env, assert_agent_stopped, last_terminated, phase, ready, restart_count};
use tart_kubelet_tests::{
    cluster::wait_for,
    fake::{EndpointState, Knobs, VmKnob, processes_of_home},
};

/// VMs that run the guest launcher, have loopback addresses and serve `port` in `state`.
fn knobs(port: u16, state: EndpointState) -> Knobs {
    Knobs::new().with_loopback_ips().with_vm(
        "*",
        VmKnob::default()
            .running_guest_launcher()
            .with_endpoint(port, state),
    )
}

fn probe(v: serde_json::Value) -> Option<Probe> {
    Some(serde_json::from_value(v).expect("a probe"))
}

/// A long-running job with the given probes.
fn job(env: &Env, name: &str, set: impl FnOnce(&mut k8s_openapi::api::core::v1::Container)) -> Pod {
    let mut pod = env.pod(name);
    let c = &mut pod.spec.as_mut().unwrap().containers[0];
    c.command = Some(vec!["/bin/sh".into(), "-c".into(), "sleep 600".into()]);
    set(c);
    pod
}

fn notes(events: &[(String, String, String)], reason: &str) -> Vec<String> {
    events
        .iter()
        .filter(|(_, r, _)| r == reason)
        .map(|(_, _, n)| n.clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_holds_the_pod_unready_until_the_guest_answers() {
    let mut env = Env::new("ready", knobs(8080, EndpointState::Failing), &[]).await;
    env.start_agent();
    env.create(&job(&env, "web", |c| {
        c.readiness_probe = probe(serde_json::json!({
            "httpGet": {"port": 8080, "path": "/healthz"}, "periodSeconds": 1}));
        c.liveness_probe = probe(serde_json::json!({
            "tcpSocket": {"port": 8080}, "periodSeconds": 1}));
    }))
    .await;
    let running = env
        .wait_pod("web", "Running", |p| phase(p) == "Running")
        .await;
    assert!(!ready(&running));
    let events = env.wait_event("web", "Unhealthy").await;
    let unhealthy = notes(&events, "Unhealthy");
    assert!(
        unhealthy
            .iter()
            .any(|n| n == "Readiness probe failed: HTTP probe failed with statuscode: 500"),
        "{unhealthy:?}"
    );
    // Every second the same failure: one Event whose series counts the repeats, as kubelet's.
    let failed = "Readiness probe failed: HTTP probe failed with statuscode: 500";
    let events: kube::Api<k8s_openapi::api::events::v1::Event> =
        kube::Api::namespaced(env.admin.clone(), &env.ns);
    let series = wait_for(Duration::from_secs(30), || async {
        let same: Vec<_> = events
            .list(&Default::default())
            .await
            .ok()?
            .items
            .into_iter()
            .filter(|e| e.note.as_deref() == Some(failed))
            .collect();
        let count = same.first()?.series.as_ref()?.count;
        (count >= 3).then_some((same.len(), count))
    })
    .await
    .unwrap_or_else(|e| panic!("no series of {failed:?}: {e}\n{}", env.agent_log()));
    assert_eq!(series.0, 1, "one Event for {} failures", series.1);
    let p = env.pods().get("web").await.unwrap();
    assert!(!ready(&p), "still 0/1 while the probe fails");
    let conditions = p.status.as_ref().unwrap().conditions.clone().unwrap();
    let cond = |t: &str| {
        conditions
            .iter()
            .find(|c| c.type_ == t)
            .map(|c| c.status.clone())
    };
    assert_eq!(cond("Ready").as_deref(), Some("False"));
    assert_eq!(cond("ContainersReady").as_deref(), Some("False"));

    env.home
        .set_knobs(&knobs(8080, EndpointState::Healthy))
        .unwrap();
    let p = env.wait_pod("web", "1/1 ready", ready).await;
    assert_eq!(
        restart_count(&p),
        0,
        "a listening port passes the liveness probe"
    );
    let failures = env
        .metric(r#"tart_kubelet_probe_results_total{probe="readiness",result="failure"}"#)
        .await
        .unwrap_or(0.0);
    assert!(failures >= 1.0, "readiness failures counted: {failures}");
    assert!(
        env.events("web")
            .await
            .iter()
            .all(|(_, r, _)| r != "Killing")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_liveness_probe_restarts_the_job_with_kubelets_events() {
    let mut env = Env::new("live", knobs(8080, EndpointState::Closed), &[]).await;
    env.start_agent();
    env.create(&job(&env, "wedged", |c| {
        c.liveness_probe = probe(serde_json::json!({
            "httpGet": {"port": 8080}, "periodSeconds": 1, "failureThreshold": 2}));
    }))
    .await;
    let p = env
        .wait_pod("wedged", "restarted once", |p| restart_count(p) >= 1)
        .await;
    let last = last_terminated(&p).expect("the killed run is the last state");
    assert_agent_stopped(&last, "a liveness kill");
    let events = env.events("wedged").await;
    let unhealthy = notes(&events, "Unhealthy");
    assert!(
        unhealthy
            .iter()
            .any(|n| n.starts_with("Liveness probe failed: ") && n.contains("connection refused")),
        "{unhealthy:?}"
    );
    assert!(
        notes(&events, "Killing")
            .iter()
            .any(|n| n == "Container vm failed liveness probe, will be restarted"),
        "{events:?}"
    );
    assert!(pod_support::in_order(
        &events,
        &["Started", "Unhealthy", "Killing"]
    ));
}

/// `exec` probes run in the guest through `tart exec`; one that hangs is killed at its
/// timeout, as a failure, and leaves no process behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_exec_probe_is_killed_at_its_timeout_and_leaves_nothing() {
    let mut env = Env::new("hung", knobs(8080, EndpointState::Healthy), &[]).await;
    env.start_agent();
    env.create(&job(&env, "slow", |c| {
        c.readiness_probe = probe(serde_json::json!({
            "exec": {"command": ["sleep", "1234.5"]},
            "timeoutSeconds": 1, "periodSeconds": 2}));
    }))
    .await;
    env.wait_pod("slow", "Running", |p| phase(p) == "Running")
        .await;
    let sleepers = || {
        processes_of_home(env.home.path())
            .into_iter()
            .filter(|pid| {
                std::fs::read(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|c| c.starts_with(b"sleep\x001234.5"))
            })
            .count()
    };
    // Sampled while the probes run: they never overlap, so at most the one in flight.
    let most = std::sync::atomic::AtomicUsize::new(0);
    // Repeats of one failure are one Event whose series counts them (docs/pods.md, "Events").
    let events = wait_for(Duration::from_secs(60), || async {
        most.fetch_max(sleepers(), std::sync::atomic::Ordering::Relaxed);
        let counted = env.event_counts("slow").await.get("Unhealthy").copied();
        if counted.unwrap_or(0) < 3 {
            return None;
        }
        Some(notes(&env.events("slow").await, "Unhealthy"))
    })
    .await
    .unwrap_or_else(|e| panic!("three timed-out probes: {e}\n{}", env.agent_log()));
    assert!(
        events
            .iter()
            .all(|n| n.starts_with("Readiness probe failed: ") && n.contains("timed out")),
        "{events:?}"
    );
    let most = most.into_inner();
    assert!(
        most <= 1,
        "{most} probe commands at once: a timed-out one was left running"
    );
    assert!(!ready(&env.pods().get("slow").await.unwrap()));
    env.delete("slow", 1).await;
    env.wait_gone("slow").await;
    let gone = wait_for(Duration::from_secs(10), || async {
        (sleepers() == 0).then_some(())
    })
    .await;
    assert!(gone.is_ok(), "a probe's command outlived its Pod");
}

/// Under `restartPolicy: Never` a run its liveness probe killed ends the Pod `Failed`, with
/// the signal's exit code: never `Succeeded`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_liveness_kill_under_never_fails_the_pod_with_the_signals_code() {
    let mut env = Env::new("livenever", knobs(8080, EndpointState::Closed), &[]).await;
    env.start_agent();
    let mut pod = job(&env, "killed", |c| {
        c.liveness_probe = probe(serde_json::json!({
            "tcpSocket": {"port": 8080}, "periodSeconds": 1, "failureThreshold": 1}));
    });
    pod.spec.as_mut().unwrap().restart_policy = Some("Never".into());
    env.create(&pod).await;
    pod_support::wait_failed_by_agent(&env, "killed", "a liveness kill under Never").await;
    let events = env.events("killed").await;
    assert!(
        notes(&events, "Killing")
            .iter()
            .any(|n| n == "Container vm failed liveness probe"),
        "{events:?}"
    );
}

/// `readinessGates`: `Ready` stays `False` with kubelet's reason and message while the gate's
/// condition is absent, and follows the container once it is patched `True` through the API.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ready_waits_for_the_readiness_gate_condition_patched_through_the_api() {
    let mut env = Env::new("gates", knobs(8080, EndpointState::Healthy), &[]).await;
    env.start_agent();
    let mut pod = job(&env, "gated", |_| {});
    pod.spec.as_mut().unwrap().readiness_gates = Some(vec![
        serde_json::from_value(serde_json::json!({"conditionType": "example.com/lb"})).unwrap(),
    ]);
    env.create(&pod).await;
    let cond = |p: &Pod, t: &str| {
        p.status
            .as_ref()?
            .conditions
            .as_ref()?
            .iter()
            .find(|c| c.type_ == t)
            .cloned()
    };
    let p = env
        .wait_pod("gated", "containers ready", |p| {
            cond(p, "ContainersReady").is_some_and(|c| c.status == "True")
        })
        .await;
    assert!(ready(&p), "the container itself is ready");
    let r = cond(&p, "Ready").expect("a Ready condition");
    assert_eq!(r.status, "False", "{r:?}");
    assert_eq!(r.reason.as_deref(), Some("ReadinessGatesNotReady"));
    assert_eq!(
        r.message.as_deref(),
        Some("corresponding condition of pod readiness gate \"example.com/lb\" does not exist.")
    );
    let patch = serde_json::json!({"status": {"conditions": [
        {"type": "example.com/lb", "status": "True"}]}});
    env.pods()
        .patch_status(
            "gated",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Strategic(patch),
        )
        .await
        .expect("patch the gate");
    let p = env
        .wait_pod("gated", "Ready", |p| {
            cond(p, "Ready").is_some_and(|c| c.status == "True")
        })
        .await;
    let r = cond(&p, "Ready").unwrap();
    assert_eq!((r.reason, r.message), (None, None));
    assert_eq!(
        cond(&p, "example.com/lb").map(|c| c.status).as_deref(),
        Some("True"),
        "the agent's writes keep the gate's condition"
    );
}
