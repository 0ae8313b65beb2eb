//! Benchmark: what delivering the guest launcher adds to a Pod's start (docs/performance.md).
//!
//! For each kind of image — the launcher baked in, or guest agent only (the agent delivers it
//! through `tart exec`) — Pods with a command are started one at a time on fake-tart, and the
//! agent's `tart_kubelet_guest_launcher_wait_seconds{outcome}` (from `tart run` to the
//! launcher's first report in the status share) is read after each, so every start is one
//! sample. The difference of the two medians is what delivery adds.
//!
//! The measurement is `#[ignore]`d (about two minutes); the test that runs by default starts
//! one Pod on each kind and checks that each wait is counted under its outcome.
//! Run: `cargo test --release -p tart-kubelet-tests --test e2e bench_launcher:: -- --ignored --nocapture`

use crate::pod_support;

use std::time::Duration;

use pod_support::{Env, phase};
use tart_kubelet_tests::{
    cluster::wait_for,
    fake::{GuestImage, Knobs, VmKnob},
    logbench::Summary,
};

/// Measured starts per kind of image.
const RUNS: usize = 20;

const WAIT: &str = "tart_kubelet_guest_launcher_wait_seconds";

async fn env(label: &str, image: GuestImage) -> Env {
    let knobs = Knobs::new().with_vm("*", VmKnob::default().guest_image(image));
    let mut env = Env::new(label, knobs, &[]).await;
    env.start_agent();
    env
}

/// `(sum, count)` of the wait histogram's `outcome` series.
async fn reading(env: &Env, outcome: &str) -> (f64, f64) {
    let series = |s: &str| format!("{WAIT}_{s}{{outcome=\"{outcome}\"}}");
    let sum = env.metric(&series("sum")).await.unwrap_or(0.0);
    let count = env.metric(&series("count")).await.unwrap_or(0.0);
    (sum, count)
}

/// Start Pod `name` (a job that sleeps), wait until its launcher reported, and return that
/// start's wait in microseconds; the Pod is deleted again.
async fn one_start(env: &Env, name: &str, outcome: &str) -> i64 {
    let before = reading(env, outcome).await;
    env.create(&env.shell_pod(name, "sleep 600")).await;
    env.wait_pod(name, "Running", |p| phase(p) == "Running")
        .await;
    let after = wait_for(Duration::from_secs(30), || async {
        let r = reading(env, outcome).await;
        (r.1 == before.1 + 1.0).then_some(r)
    })
    .await
    .unwrap_or_else(|_| panic!("the {outcome} wait was not counted\n{}", env.agent_log()));
    env.delete(name, 0).await;
    env.wait_gone(name).await;
    ((after.0 - before.0) * 1e6).round() as i64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_launchers_wait_is_counted_under_where_it_came_from() {
    for (image, outcome) in [
        (GuestImage::AgentOnly, "delivered"),
        (GuestImage::Baked, "image"),
    ] {
        let env = env("bench-launcher-smoke", image).await;
        let us = one_start(&env, "job", outcome).await;
        assert!(us > 0, "{outcome}: {us} µs");
        let other = if outcome == "image" {
            "delivered"
        } else {
            "image"
        };
        assert_eq!(
            reading(&env, other).await.1,
            0.0,
            "{image:?} counted as {other}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: about two minutes; run with --ignored --nocapture"]
async fn delivery_adds_to_the_start_of_a_job() {
    let mut medians = Vec::new();
    for (image, outcome) in [
        (GuestImage::Baked, "image"),
        (GuestImage::AgentOnly, "delivered"),
    ] {
        let env = env("bench-launcher", image).await;
        let mut waits = Vec::with_capacity(RUNS);
        for i in 0..RUNS {
            waits.push(one_start(&env, &format!("job-{i}"), outcome).await);
        }
        let s = Summary::of(waits).expect("samples");
        println!("tart run → launcher reported, {image:?}: {s}");
        medians.push(s.p50);
    }
    println!("delivery adds, p50: {:.1} ms", medians[1] - medians[0]);
}
