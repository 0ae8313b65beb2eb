//! Images on a Mac: a golden base VM per digest, made once and kept across agent restarts, and
//! the disk budget that evicts unused digests but never one a Pod uses. Real control plane,
//! real agent, fake-tart.

use crate::pod_support;

use std::time::Duration;

use pod_support::{Env, phase, ready};
use tart_kubelet_tests::{
    cluster::{testing::run_program, wait_for},
    fake::{ImageKnob, Knobs},
};

const IMAGE: &str = "ghcr.io/acme/macos-runner:15";
const OTHER: &str = "ghcr.io/acme/macos-builder:15";

fn knobs() -> Knobs {
    Knobs::new()
        .with_latency_scale(0.001)
        .with_image("default", ImageKnob::sized(1.0, 20))
}

fn pod_of(env: &Env, name: &str, image: &str) -> k8s_openapi::api::core::v1::Pod {
    let mut pod = env.pod(name);
    pod.spec.as_mut().unwrap().containers[0].image = Some(image.into());
    pod
}

async fn run(env: &Env, name: &str, image: &str) {
    env.create(&pod_of(env, name, image)).await;
    env.wait_pod(name, "Running", |p| phase(p) == "Running" && ready(p))
        .await;
}

fn full_log(env: &Env) -> String {
    std::fs::read_to_string(&env.log_path).unwrap_or_default()
}

async fn golden(env: &Env, result: &str) -> f64 {
    env.metric(&format!(
        "tart_kubelet_golden_bases_total{{result=\"{result}\"}}"
    ))
    .await
    .unwrap_or(-1.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_golden_base_is_made_once_per_digest_and_outlives_pods_and_agent_restarts() {
    let mut env = Env::new("golden", knobs(), &[]).await;
    env.start_agent();
    run(&env, "first", IMAGE).await;
    let goldens = env.goldens();
    assert_eq!(goldens.len(), 1, "one golden for the digest: {goldens:?}");
    assert_eq!(golden(&env, "miss").await, 1.0);

    env.delete("first", 0).await;
    env.wait_gone("first").await;
    run(&env, "second", IMAGE).await;
    let evs = env.wait_event("second", "Pulled").await;
    assert!(
        evs.iter()
            .any(|(_, r, n)| r == "Pulled" && n.contains("already present")),
        "{evs:?}"
    );
    assert_eq!(
        golden(&env, "hit").await,
        1.0,
        "the second Pod clones the golden"
    );
    assert_eq!(golden(&env, "miss").await, 1.0);
    assert_eq!(env.goldens(), goldens);
    let log = full_log(&env);
    assert!(log.contains("golden base made"), "{}", env.agent_log());

    // The Node lists the image with its size, as `kubectl get node` shows it.
    let kc = env.cp.kubeconfig_path().display().to_string();
    let listed = wait_for(Duration::from_secs(30), || async {
        let (ok, out, _) = run_program(
            "kubectl",
            &[
                "--kubeconfig",
                &kc,
                "get",
                "node",
                &env.node,
                "-o",
                "jsonpath={.status.images}",
            ],
        )
        .await;
        (ok && out.contains(IMAGE)).then_some(out)
    })
    .await
    .unwrap_or_else(|e| panic!("status.images never listed {IMAGE}: {e}"));
    let images: serde_json::Value = serde_json::from_str(&listed).expect("json");
    let entry = images
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["names"].as_array().unwrap().iter().any(|n| n == IMAGE))
        .unwrap();
    assert!(
        entry["names"][0].as_str().unwrap().contains("@sha256:"),
        "the digest name comes first: {entry}"
    );
    assert!(entry["sizeBytes"].as_i64().unwrap() > 0, "{entry}");

    // A restarted agent finds the golden it made.
    env.kill_agent().await;
    env.start_agent();
    run(&env, "third", IMAGE).await;
    assert_eq!(golden(&env, "hit").await, 1.0);
    assert_eq!(golden(&env, "miss").await, 0.0);
    assert_eq!(env.goldens(), goldens, "kept across the restart");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_budget_evicts_an_unused_digest_with_its_golden_and_never_one_in_use() {
    let mut env = Env::new(
        "budget",
        knobs(),
        &["--image-cache-budget", "1Ki", "--image-gc-period", "1s"],
    )
    .await;
    env.start_agent();
    run(&env, "keeper", IMAGE).await;
    run(&env, "passing", OTHER).await;
    assert_eq!(env.goldens().len(), 2);
    env.delete("passing", 0).await;
    env.wait_gone("passing").await;

    // The next passes evict the builder image (cache entry, tag and golden), not the runner's.
    let evicted = wait_for(Duration::from_secs(30), || async {
        let n = env
            .metric("tart_kubelet_image_evictions_total{trigger=\"cache_budget\"}")
            .await
            .unwrap_or(0.0);
        (n >= 1.0 && env.goldens().len() == 1).then_some(n)
    })
    .await;
    assert!(
        evicted.is_ok(),
        "nothing evicted within 30 s: goldens {:?}\n{}",
        env.goldens(),
        env.agent_log()
    );
    let oci = env.home.path().join("cache/OCIs/ghcr.io/acme");
    assert!(
        !oci.join("macos-builder/15").exists(),
        "the builder's tag is gone"
    );
    assert!(
        oci.join("macos-runner/15").exists(),
        "the runner's image is in use and stays"
    );
    let log = full_log(&env);
    assert!(log.contains("image evicted"), "{}", env.agent_log());
    assert!(
        !log.lines()
            .any(|l| l.contains("image evicted") && l.contains("macos-runner")),
        "an image in use was evicted"
    );
    // The budget cannot be met while the runner's image is in use: said, not forced.
    assert!(
        log.contains("the image budget cannot be met"),
        "{}",
        env.agent_log()
    );
    let p = env
        .wait_pod("keeper", "still Running", |p| phase(p) == "Running")
        .await;
    assert!(ready(&p));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_least_recently_used_unused_digest_goes_first_and_disk_pressure_never_takes_one_in_use()
{
    const THIRD: &str = "ghcr.io/acme/macos-tester:15";
    let mut env = Env::new("lru", knobs(), &["--image-gc-period", "1s"]).await;
    env.start_agent();
    run(&env, "keeper", IMAGE).await;
    for (name, image) in [("older", OTHER), ("newer", THIRD)] {
        run(&env, name, image).await;
        env.delete(name, 0).await;
        env.wait_gone(name).await;
    }
    assert_eq!(env.goldens().len(), 3);
    let total = wait_for(Duration::from_secs(30), || async {
        env.metric("tart_kubelet_image_cache_digests")
            .await
            .filter(|n| *n == 3.0)?;
        env.metric("tart_kubelet_image_cache_bytes").await
    })
    .await
    .expect("the cache was never measured");

    // A budget one byte short: one digest must go, the least recently used one not in use.
    let budget = format!("{}", total as u64 - 1);
    env.kill_agent().await;
    env.set_extra_args(&["--image-gc-period", "1s", "--image-cache-budget", &budget]);
    env.start_agent();
    let oci = env.home.path().join("cache/OCIs/ghcr.io/acme");
    let gone = wait_for(Duration::from_secs(30), || async {
        (!oci.join("macos-builder/15").exists()).then_some(())
    })
    .await;
    assert!(gone.is_ok(), "the older digest stayed\n{}", env.agent_log());
    assert!(
        oci.join("macos-tester/15").exists(),
        "the newer one went too"
    );
    assert!(oci.join("macos-runner/15").exists());
    assert_eq!(env.goldens().len(), 2);

    // Disk pressure (a floor no disk meets) evicts every unused digest, never the one in use.
    env.kill_agent().await;
    env.set_extra_args(&["--image-gc-period", "1s", "--disk-pressure-free", "99%"]);
    env.start_agent();
    let gone = wait_for(Duration::from_secs(30), || async {
        (!oci.join("macos-tester/15").exists()).then_some(())
    })
    .await;
    assert!(
        gone.is_ok(),
        "the unused digest stayed\n{}",
        env.agent_log()
    );
    assert!(
        oci.join("macos-runner/15").exists(),
        "DiskPressure evicted the image in use"
    );
    assert_eq!(env.goldens().len(), 1);
    let p = env
        .wait_pod("keeper", "still Running", |p| phase(p) == "Running")
        .await;
    assert!(ready(&p));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tart_auto_prune_is_off_so_a_full_volume_keeps_the_first_image_through_the_next_pull() {
    // No free space at all, and the runner image (20 GB) alone would cover what the builder's
    // pull asks for (10 GB + 128 MiB): with auto-prune on, that pull evicts the runner
    // (fake_tart_prune.rs shows it). The agent runs tart with TART_NO_AUTO_PRUNE.
    let knobs = knobs()
        .with_image(OTHER, ImageKnob::sized(1.0, 10))
        .with_volume_available_gb(0.0);
    let mut env = Env::new("noautoprune", knobs, &[]).await;
    env.start_agent();
    run(&env, "first", IMAGE).await;
    env.delete("first", 0).await;
    env.wait_gone("first").await;
    run(&env, "second", OTHER).await;
    let oci = env.home.path().join("cache/OCIs/ghcr.io/acme");
    assert!(
        oci.join("macos-builder/15/config.json").is_file(),
        "the second image is cached"
    );
    assert!(
        oci.join("macos-runner/15/config.json").is_file(),
        "tart's auto-prune evicted the first image\n{}",
        env.agent_log()
    );
}
