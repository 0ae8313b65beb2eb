//! End to end on the real control plane: lifecycle hooks and termination that waits for a busy
//! job. fake-tart runs the guest launcher and `tart exec` commands as real processes (in the
//! VM's guest root), so a hook's effect and the job's busy/idle mark are real files.

use crate::pod_support;

use std::{path::PathBuf, time::Duration};

use k8s_openapi::api::core::v1::{Container, Lifecycle, Pod};
use pod_support::{Env, assert_agent_stopped, last_terminated, phase, restart_count};
use tart_kubelet_tests::{
    cluster::wait_for,
    fake::{Knobs, VmKnob},
};

/// VMs that run the guest launcher (and so run `tart exec` commands for real).
fn knobs() -> Knobs {
    Knobs::new().with_vm("*", VmKnob::default().running_guest_launcher())
}

fn lifecycle(v: serde_json::Value) -> Option<Lifecycle> {
    Some(serde_json::from_value(v).expect("a lifecycle"))
}

/// A Pod whose job is `script` (run by `/bin/sh -c`).
fn job(env: &Env, name: &str, script: &str, set: impl FnOnce(&mut Container)) -> Pod {
    let mut pod = env.pod(name);
    let c = &mut pod.spec.as_mut().unwrap().containers[0];
    c.command = Some(vec!["/bin/sh".into(), "-c".into(), script.into()]);
    set(c);
    pod
}

/// The Pod `hooked`, whose job sleeps and whose `postStart` is `sh -c <hook>`, under
/// `restartPolicy: <policy>`.
fn post_start_job(env: &Env, hook: &str, policy: &str) -> Pod {
    let mut pod = job(env, "hooked", "exec sleep 600", |c| {
        c.lifecycle = lifecycle(serde_json::json!({
            "postStart": {"exec": {"command": ["sh", "-c", hook]}}}));
    });
    pod.spec.as_mut().unwrap().restart_policy = Some(policy.into());
    pod
}

fn job_busy(p: &Pod) -> Option<String> {
    p.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "tart.run/JobBusy")
        .map(|c| c.status.clone())
}

/// The guest root fake-tart gives the Pod's VM (`$TART_GUEST_ROOT` of the job, the working
/// directory of `tart exec`).
fn guest_root(env: &Env, pod: &Pod) -> PathBuf {
    env.home
        .path()
        .join("vms")
        .join(Env::vm_of(pod))
        .join("guest")
}

/// Marks itself busy, waits for the test's `done` file, marks itself idle, then idles on.
const BUSY_UNTIL_DONE: &str = r#"echo busy > "$TART_JOB_STATE_FILE"
while [ ! -f "$TART_GUEST_ROOT/done" ]; do sleep 0.1; done
echo idle > "$TART_JOB_STATE_FILE"
exec sleep 600"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_post_start_hook_is_failed_post_start_hook_and_a_restart() {
    let mut env = Env::new("poststart", knobs(), &[]).await;
    env.start_agent();
    // Restarted even under `OnFailure`: the killed run is a failure, not exit 0.
    env.create(&post_start_job(&env, "echo nope; exit 1", "OnFailure"))
        .await;
    let events = env.wait_event("hooked", "FailedPostStartHook").await;
    let failed: Vec<_> = events
        .iter()
        .filter(|(_, r, _)| r == "FailedPostStartHook")
        .collect();
    assert_eq!(failed[0].0, "Warning");
    assert_eq!(failed[0].2, "PostStartHook failed");
    let p = env
        .wait_pod("hooked", "restarted", |p| restart_count(p) >= 1)
        .await;
    let last = last_terminated(&p).expect("the killed run");
    assert_agent_stopped(&last, "a failed postStart under OnFailure");
    let msg = last.message.unwrap_or_default();
    assert!(
        msg.starts_with("Exec lifecycle hook ([sh -c echo nope; exit 1]) for Container \"vm\"")
            && msg.contains("exited with 1"),
        "{msg}"
    );
    let events = env.events("hooked").await;
    assert!(
        pod_support::in_order(&events, &["Started", "FailedPostStartHook", "Killing"]),
        "{events:?}"
    );
}

/// Under `restartPolicy: Never` a failed `postStart` ends the Pod `Failed` with the signal's
/// exit code and the hook's failure as the message: never `Succeeded`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_post_start_hook_under_never_fails_the_pod() {
    let mut env = Env::new("poststartnever", knobs(), &[]).await;
    env.start_agent();
    env.create(&post_start_job(&env, "exit 2", "Never")).await;
    let t =
        pod_support::wait_failed_by_agent(&env, "hooked", "a failed postStart under Never").await;
    let msg = t.message.unwrap_or_default();
    assert!(
        msg.starts_with("Exec lifecycle hook ([sh -c exit 2]) for Container \"vm\""),
        "{msg}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_job_deleted_with_a_60s_grace_runs_pre_stop_then_waits_for_it_to_go_idle() {
    let mut env = Env::new("waits", knobs(), &[]).await;
    env.start_agent();
    let out = tempfile::tempdir().unwrap();
    let seen = out.path().join("pre-stop.out");
    let created = env
        .create(&job(&env, "runner", BUSY_UNTIL_DONE, |c| {
            c.lifecycle = lifecycle(serde_json::json!({
                "preStop": {"exec": {"command": ["sh", "-c",
                    format!("pwd > {}", seen.display())]}}}));
        }))
        .await;
    env.wait_pod("runner", "marked busy", |p| {
        job_busy(p).as_deref() == Some("True")
    })
    .await;
    let started = std::time::Instant::now();
    env.delete("runner", 60).await;
    env.wait_event("runner", "WaitingForJob").await;
    let pwd = std::fs::read_to_string(&seen).expect("preStop ran before the wait");
    assert_eq!(
        pwd.trim(),
        guest_root(&env, &created).to_str().unwrap(),
        "preStop ran in the guest through tart exec"
    );
    let p = env.pods().get("runner").await.expect("the Pod waits");
    assert_eq!(phase(&p), "Running");
    std::fs::write(guest_root(&env, &created).join("done"), b"").unwrap();
    env.wait_gone("runner").await;
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "waited out the grace"
    );
    let counts = env.event_counts("runner").await;
    assert_eq!(counts.get("WaitingForJob"), Some(&1), "{counts:?}");
    assert_eq!(counts.get("GracePeriodExpired"), None, "{counts:?}");
    assert_eq!(counts.get("FailedPreStopHook"), None, "{counts:?}");
    let waited = env
        .metric(r#"tart_kubelet_pod_termination_seconds_count{how="waited"}"#)
        .await;
    assert_eq!(waited, Some(1.0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_busier_than_its_grace_is_stopped_when_the_grace_expires_with_one_event() {
    let mut env = Env::new("expires", knobs(), &[]).await;
    env.start_agent();
    env.create(&job(&env, "stuck", BUSY_UNTIL_DONE, |_| {}))
        .await;
    env.wait_pod("stuck", "marked busy", |p| {
        job_busy(p).as_deref() == Some("True")
    })
    .await;
    let started = std::time::Instant::now();
    env.delete("stuck", 5).await;
    env.wait_gone("stuck").await;
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(5),
        "stopped before the grace ran out: {took:?}"
    );
    let counts = wait_for(Duration::from_secs(10), || async {
        let c = env.event_counts("stuck").await;
        c.contains_key("GracePeriodExpired").then_some(c)
    })
    .await
    .expect("a GracePeriodExpired event");
    assert_eq!(counts.get("GracePeriodExpired"), Some(&1), "{counts:?}");
    assert_eq!(counts.get("WaitingForJob"), Some(&1), "{counts:?}");
    let expired = env
        .metric(r#"tart_kubelet_pod_termination_seconds_count{how="grace_expired"}"#)
        .await;
    assert_eq!(expired, Some(1.0));
}

/// `kubectl drain` evicts the runner with its own grace: the Mac waits for the busy job, and
/// the drain completes once the job marks itself idle.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_drain_of_a_mac_with_a_busy_runner_waits_for_the_job() {
    let mut env = Env::new("drain", knobs(), &[]).await;
    env.start_agent();
    let mut pod = job(&env, "drained", BUSY_UNTIL_DONE, |_| {});
    pod.spec.as_mut().unwrap().termination_grace_period_seconds = Some(60);
    let created = env.create(&pod).await;
    env.wait_pod("drained", "marked busy", |p| {
        job_busy(p).as_deref() == Some("True")
    })
    .await;
    let kc = env.cp.kubeconfig_path();
    let started = std::time::Instant::now();
    let mut drain = tokio::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&kc)
        .args(["drain", &env.node, "--force", "--ignore-daemonsets"])
        .args(["--delete-emptydir-data", "--timeout", "120s"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("kubectl drain");
    env.wait_event("drained", "WaitingForJob").await;
    let p = env.pods().get("drained").await.expect("the Pod waits");
    assert_eq!(phase(&p), "Running");
    assert!(
        drain.try_wait().expect("drain").is_none(),
        "the drain ended while the job was busy"
    );
    std::fs::write(guest_root(&env, &created).join("done"), b"").unwrap();
    let out = tokio::time::timeout(Duration::from_secs(120), drain.wait_with_output())
        .await
        .expect("drain finished")
        .expect("drain ran");
    assert!(
        out.status.success(),
        "drain failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        env.agent_log()
    );
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "waited out the grace"
    );
    env.wait_gone("drained").await;
    let counts = env.event_counts("drained").await;
    assert_eq!(counts.get("WaitingForJob"), Some(&1), "{counts:?}");
    assert_eq!(counts.get("GracePeriodExpired"), None, "{counts:?}");
}

/// Under the node's own identity (NodeRestriction: Pod status only) the job's mark is
/// published as the `tart.run/JobBusy` condition, both ways.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn as_its_node_the_agent_publishes_the_job_busy_condition() {
    let mut env = Env::new_as_node("busycond", knobs(), &[]).await;
    env.start_agent();
    let created = env
        .create(&job(&env, "runner", BUSY_UNTIL_DONE, |_| {}))
        .await;
    let p = env
        .wait_pod("runner", "marked busy", |p| {
            job_busy(p).as_deref() == Some("True")
        })
        .await;
    let reason = |p: &Pod| {
        p.status
            .as_ref()?
            .conditions
            .as_ref()?
            .iter()
            .find(|c| c.type_ == "tart.run/JobBusy")?
            .reason
            .clone()
    };
    assert_eq!(reason(&p).as_deref(), Some("JobBusy"));
    std::fs::write(guest_root(&env, &created).join("done"), b"").unwrap();
    let p = env
        .wait_pod("runner", "marked idle", |p| {
            job_busy(p).as_deref() == Some("False")
        })
        .await;
    assert_eq!(reason(&p).as_deref(), Some("JobIdle"));
}
