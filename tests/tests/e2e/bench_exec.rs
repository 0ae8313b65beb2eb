//! Benchmark: `kubectl exec <pod> -- true` (v1.32) round trips through the real API server
//! (v1.20.2) to the agent's kubelet API and `tart exec` in a guest run by fake-tart, and the
//! agent's share of each.
//!
//! Each run's wall time is kubectl's whole life: its process start, the API server's
//! authentication and the upgrade it proxies, the agent's session, kubectl's exit. The agent's
//! own share comes from its metrics over the measured runs: `tart_kubelet_exec_setup_seconds`
//! (request reaching the agent → `tart exec` spawned) and `tart_kubelet_exec_session_seconds`
//! (→ status written). The `tart exec` child's own run is timed by running the same
//! `fake-tart exec <vm> true` directly, so the session minus that run is the agent's part.
//!
//! The measurement is `#[ignore]`d (about a minute); the test that runs by default makes a few
//! round trips and checks that each is counted.
//! Run: `cargo test --release -p tart-kubelet-tests --test e2e bench_exec:: -- --ignored --nocapture`

use crate::pod_support;

use std::{
    process::Stdio,
    time::{Duration, Instant},
};

use pod_support::{Env, phase};
use tart_kubelet_tests::{
    agent::free_port,
    cluster::{ControlPlane, wait_for},
    fake::{Knobs, VmKnob},
    logbench::Summary,
};

/// Measured round trips.
const RUNS: usize = 100;
/// Round trips before measuring (the first connections, kubectl's discovery cache).
const WARMUP: usize = 5;
/// How long one `kubectl exec` may take.
const ONE: Duration = Duration::from_secs(60);

async fn env(label: &str) -> Env {
    let cp = tokio::task::spawn_blocking(ControlPlane::shared)
        .await
        .expect("control plane");
    let args = cp.kubelet_api_args(free_port().expect("free port").port());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let knobs = Knobs::new().with_vm("*", VmKnob::default().running_guest_launcher());
    let mut env = Env::new(label, knobs, &args).await;
    env.start_agent();
    let mut pod = env.pod("job");
    pod.spec.as_mut().unwrap().containers[0].command =
        Some(vec!["/bin/sh".into(), "-c".into(), "sleep 600".into()]);
    env.create(&pod).await;
    env.wait_pod("job", "Running", |p| phase(p) == "Running")
        .await;
    env
}

/// One `kubectl exec job -- true`; its wall time, or a panic with kubectl's stderr.
async fn exec_true(env: &Env) -> Duration {
    let t0 = Instant::now();
    let out = tokio::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(env.cp.kubeconfig_path())
        .args(["-n", &env.ns, "exec", "job", "--", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(ONE, out)
        .await
        .expect("kubectl exec within 60 s")
        .expect("kubectl");
    let took = t0.elapsed();
    assert!(
        out.status.success(),
        "kubectl exec: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        env.agent_log()
    );
    took
}

/// One `fake-tart exec <vm> true` against the Pod's VM, as the agent runs it.
async fn tart_exec_true(env: &Env, vm: &str) -> Duration {
    let t0 = Instant::now();
    let out = env
        .home
        .tart(env!("CARGO_BIN_EXE_fake-tart"), &["exec", vm, "true"])
        .await
        .expect("fake-tart exec");
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    t0.elapsed()
}

/// A histogram's `(sum, count)` as the agent exposes it now.
async fn histogram(env: &Env, name: &str) -> (f64, f64) {
    let sum = env.metric(&format!("{name}_sum")).await.unwrap_or(0.0);
    let count = env.metric(&format!("{name}_count")).await.unwrap_or(0.0);
    (sum, count)
}

/// The mean of a histogram's observations between two readings, in ms.
fn mean_ms(before: (f64, f64), after: (f64, f64)) -> f64 {
    let n = after.1 - before.1;
    if n <= 0.0 {
        return f64::NAN;
    }
    (after.0 - before.0) / n * 1000.0
}

fn micros(d: Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}

fn vm_name(env: &Env) -> String {
    let vms = env.vms();
    assert_eq!(vms.len(), 1, "one VM: {vms:?}");
    vms[0].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_exec_round_trip_is_counted_and_timed_by_the_agent() {
    let env = env("bench-exec-smoke").await;
    let ok = "tart_kubelet_exec_sessions_total{outcome=\"ok\"}";
    let before = env.metric(ok).await.unwrap_or(0.0);
    let setup = histogram(&env, "tart_kubelet_exec_setup_seconds").await;
    let session = histogram(&env, "tart_kubelet_exec_session_seconds").await;
    for _ in 0..3 {
        exec_true(&env).await;
    }
    // A session is counted once the API server has hung up after the status.
    let counted = wait_for(Duration::from_secs(30), || async {
        (env.metric(ok).await == Some(before + 3.0)).then_some(())
    })
    .await;
    assert!(
        counted.is_ok(),
        "{:?} ok sessions after {before}\n{}",
        env.metric(ok).await,
        env.agent_log()
    );
    let setup_after = histogram(&env, "tart_kubelet_exec_setup_seconds").await;
    let session_after = histogram(&env, "tart_kubelet_exec_session_seconds").await;
    assert_eq!(setup_after.1 - setup.1, 3.0);
    assert_eq!(session_after.1 - session.1, 3.0);
    let (setup_ms, session_ms) = (mean_ms(setup, setup_after), mean_ms(session, session_after));
    assert!(
        0.0 < setup_ms && setup_ms < session_ms,
        "setup {setup_ms} ms is part of the session {session_ms} ms"
    );
    let direct = tart_exec_true(&env, &vm_name(&env)).await;
    assert!(direct < ONE);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: about a minute; run with --ignored --nocapture"]
async fn kubectl_exec_true_round_trip() {
    let env = env("bench-exec").await;
    for _ in 0..WARMUP {
        exec_true(&env).await;
    }
    let setup = histogram(&env, "tart_kubelet_exec_setup_seconds").await;
    let session = histogram(&env, "tart_kubelet_exec_session_seconds").await;
    let mut walls = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        walls.push(exec_true(&env).await);
    }
    let setup_ms = mean_ms(
        setup,
        histogram(&env, "tart_kubelet_exec_setup_seconds").await,
    );
    let session_ms = mean_ms(
        session,
        histogram(&env, "tart_kubelet_exec_session_seconds").await,
    );
    let vm = vm_name(&env);
    let mut direct = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        direct.push(tart_exec_true(&env, &vm).await);
    }
    let wall = Summary::of(walls.iter().copied().map(micros)).expect("runs");
    let child = Summary::of(direct.iter().copied().map(micros)).expect("runs");
    let mean =
        |v: &[Duration]| v.iter().map(Duration::as_secs_f64).sum::<f64>() * 1000.0 / v.len() as f64;
    let (wall_mean, child_mean) = (mean(&walls), mean(&direct));
    let agent_ms = session_ms - child_mean;
    println!("kubectl exec -- true, {RUNS} runs after {WARMUP} warm-up");
    println!("  wall (kubectl's life)        {wall}  mean {wall_mean:.1} ms");
    println!("  fake-tart exec true (direct) {child}  mean {child_mean:.1} ms");
    println!("  agent: setup mean            {setup_ms:.1} ms (request -> tart exec spawned)");
    println!("  agent: session mean          {session_ms:.1} ms (request -> status written)");
    println!(
        "  agent's share: session - tart exec run = {agent_ms:.1} ms = {:.1} % of the mean wall time",
        agent_ms / wall_mean * 100.0
    );
    assert!(wall.p50 > 0.0 && session_ms > 0.0 && setup_ms > 0.0);
}
