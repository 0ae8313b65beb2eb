//! Pre-pull declared by operators, paced fleet-wide with Lease tokens. Real control plane, real
//! agents (the shipped RBAC), fake-tart.

use crate::pod_support;

use std::time::Duration;

use k8s_openapi::{
    api::{coordination::v1::Lease, core::v1::ConfigMap},
    jiff::Timestamp,
};
use kube::{
    Api,
    api::{ListParams, ObjectMeta, PostParams},
};
use pod_support::{Env, phase, ready};
use tart_kubelet_tests::{
    cluster::{unique, wait_for},
    fake::{ImageKnob, Knobs},
};

const NS: &str = "tart-kubelet";

/// Knobs where a pull of `image` takes about `secs` seconds of wall time.
fn knobs(image: &str, secs: f64) -> Knobs {
    // 1 GB at `1000 / (secs / 0.001)` MB/s of simulated time, scaled by 0.001.
    Knobs::new()
        .with_latency_scale(0.001)
        .with_pull_mb_per_s(1.0 / secs)
        .with_image(image, ImageKnob::sized(1.0, 20))
        .with_image("default", ImageKnob::sized(1.0, 20))
}

/// The agent's flags: its own declaration `config`, read every second, and a Node label
/// `prepull-fleet=<label>` the declaration selects.
fn agent_args(config: &str, label: &str) -> [String; 6] {
    [
        "--prepull-config".to_owned(),
        format!("{NS}/{config}"),
        "--prepull-period".to_owned(),
        "1s".to_owned(),
        "--node-label".to_owned(),
        format!("prepull-fleet={label}"),
    ]
}

async fn declare(env: &Env, name: &str, json: &str) {
    let api: Api<ConfigMap> = Api::namespaced(env.admin.clone(), NS);
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        data: Some([("prepull.json".to_owned(), json.to_owned())].into()),
        ..ConfigMap::default()
    };
    api.create(&PostParams::default(), &cm)
        .await
        .expect("create the declaration");
}

/// Nodes among `nodes` whose Node Lease carries a live pull token (an annotation
/// `tart.run/pull-<hex>`, live while the Lease is renewed).
async fn holders(env: &Env, nodes: &[String]) -> Vec<String> {
    let api: Api<Lease> = Api::namespaced(env.admin.clone(), "kube-node-lease");
    let now = Timestamp::now().as_second();
    api.list(&ListParams::default())
        .await
        .map(|l| l.items)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|l| {
            let name = l.metadata.name.clone()?;
            let tokens = l
                .metadata
                .annotations
                .as_ref()?
                .keys()
                .any(|k| k.starts_with("tart.run/pull-"));
            let s = l.spec?;
            let renewed = s.renew_time?.0.as_second();
            (tokens && now < renewed + i64::from(s.lease_duration_seconds?)).then_some(name)
        })
        .filter(|h| nodes.contains(h))
        .collect()
}

fn golden_count(env: &Env) -> usize {
    env.goldens().len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declared_image_is_pulled_before_any_pod_and_its_pod_starts_without_a_pull() {
    let image = format!("ghcr.io/acme/prepull-{}:15", unique("img"));
    let config = unique("prepull");
    let label = unique("fleet");
    let args = agent_args(&config, &label);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut env = Env::new("prepull", knobs(&image, 0.5), &args).await;
    env.start_agent();
    declare(
        &env,
        &config,
        &format!(
            r#"{{"images": [{{"image": "{image}", "nodeSelector": {{"prepull-fleet": "{label}"}}}},
                            {{"image": "{image}-other", "nodeSelector": {{"prepull-fleet": "elsewhere"}}}}],
                "maxConcurrentPulls": 1}}"#
        ),
    )
    .await;
    let ready_metric = wait_for(Duration::from_secs(60), || async {
        let n = env
            .metric("tart_kubelet_prepull_images{state=\"ready\"}")
            .await
            .unwrap_or(0.0);
        (n >= 1.0 && golden_count(&env) == 1).then_some(n)
    })
    .await;
    assert!(
        ready_metric.is_ok(),
        "never pre-pulled: goldens {:?}\n{}",
        env.goldens(),
        env.agent_log()
    );
    assert_eq!(
        env.metric("tart_kubelet_image_pull_duration_seconds_count{source=\"prepull\"}")
            .await,
        Some(1.0),
        "one pre-pull; the image for another selector is not pulled here"
    );

    // The Node says so.
    let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(env.admin.clone());
    let cond = wait_for(Duration::from_secs(30), || async {
        let n = nodes.get(&env.node).await.ok()?;
        n.status?
            .conditions?
            .into_iter()
            .find(|c| c.type_ == "ImagesPrepulled" && c.status == "True")
    })
    .await
    .expect("the Node never said its images are pre-pulled");
    assert_eq!(cond.reason.as_deref(), Some("AllImagesReady"));
    assert_eq!(
        cond.message.as_deref(),
        Some("1 of 1 declared images ready")
    );

    let mut pod = env.pod("runner");
    pod.spec.as_mut().unwrap().containers[0].image = Some(image.clone());
    env.create(&pod).await;
    env.wait_pod("runner", "Running", |p| phase(p) == "Running" && ready(p))
        .await;
    let evs = env.wait_event("runner", "Pulled").await;
    assert!(
        evs.iter()
            .any(|(_, r, n)| r == "Pulled" && n.contains("already present on machine")),
        "the Pod waited on a pull: {evs:?}"
    );
    assert_eq!(
        env.metric("tart_kubelet_golden_bases_total{result=\"hit\"}")
            .await,
        Some(1.0)
    );
    assert!(
        holders(&env, std::slice::from_ref(&env.node))
            .await
            .is_empty(),
        "the token was given back"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_macs_than_tokens_hold_the_cap_and_a_killed_holders_token_frees_itself() {
    let image = format!("ghcr.io/acme/paced-{}:15", unique("img"));
    let config = unique("paced");
    let label = unique("fleet");
    let args = agent_args(&config, &label);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    // Three Macs, one token; each pull takes about 8 s.
    let mut macs = Vec::new();
    for i in 0..3 {
        let mut env = Env::new(&format!("paced{i}"), knobs(&image, 8.0), &args).await;
        env.start_agent();
        macs.push(env);
    }
    declare(
        &macs[0],
        &config,
        &format!(
            r#"{{"images": [{{"image": "{image}", "nodeSelector": {{"prepull-fleet": "{label}"}}}}],
                "maxConcurrentPulls": 1}}"#
        ),
    )
    .await;

    let nodes: Vec<String> = macs.iter().map(|m| m.node.clone()).collect();
    // The first holder is killed mid-pull; its token outlives it until it expires. The holder
    // is the Mac both holding a token and pulling: a Mac that claims while another holds the
    // token shows its claim on its Lease until it has listed the other and withdrawn it.
    let victim = wait_for(Duration::from_secs(60), || async {
        let held = holders(&macs[0], &nodes).await;
        for (i, m) in macs.iter().enumerate() {
            let pulling = m
                .metric("tart_kubelet_image_pulls_in_flight{source=\"prepull\"}")
                .await
                .unwrap_or(0.0);
            if pulling > 0.0 && held.contains(&m.node) {
                return Some(i);
            }
        }
        None
    })
    .await
    .expect("no Mac ever took the token and pulled");
    macs[victim].kill_agent().await;
    let killed_at = tokio::time::Instant::now();

    // Watch the survivors' pre-pulls until both hold the image: never more than one at a time,
    // and none before the dead holder's token expired with its Node Lease (renewed every 3 s,
    // 12 s long in these tests).
    let survivors: Vec<&Env> = macs
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != victim)
        .map(|(_, m)| m)
        .collect();
    let mut max_pulling = 0.0f64;
    let mut next_pull_after: Option<Duration> = None;
    let deadline = killed_at + Duration::from_secs(120);
    loop {
        let mut pulling = 0.0;
        for m in &survivors {
            pulling += m
                .metric("tart_kubelet_image_pulls_in_flight{source=\"prepull\"}")
                .await
                .unwrap_or(0.0);
        }
        max_pulling = max_pulling.max(pulling);
        if next_pull_after.is_none() && pulling > 0.0 {
            next_pull_after = Some(killed_at.elapsed());
        }
        if survivors.iter().all(|m| golden_count(m) == 1) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the surviving Macs never all pre-pulled; tokens now {:?}",
            holders(&macs[0], &nodes).await
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(max_pulling, 1.0, "more than one Mac pulled at once");
    let after = next_pull_after.expect("no surviving Mac was seen pulling");
    assert!(
        after >= Duration::from_secs(8),
        "a Mac pulled before the dead holder's token expired ({after:?})"
    );
    let mut waits = 0.0;
    for m in &survivors {
        waits += m
            .metric("tart_kubelet_prepull_token_waits_total")
            .await
            .unwrap_or(0.0);
    }
    assert!(waits >= 1.0, "no Mac ever waited for the token");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn as_its_node_an_agent_reads_the_declaration_and_holds_a_token() {
    let image = format!("ghcr.io/acme/node-prepull-{}:15", unique("img"));
    let config = unique("nodeprepull");
    let label = unique("fleet");
    let args = agent_args(&config, &label);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    // A pull long enough to see its token (about 4 s).
    let mut env = Env::new_as_node("nodeprepull", knobs(&image, 4.0), &args).await;
    env.start_agent();
    declare(
        &env,
        &config,
        &format!(
            r#"{{"images": [{{"image": "{image}", "nodeSelector": {{"prepull-fleet": "{label}"}}}}],
                "maxConcurrentPercent": 50}}"#
        ),
    )
    .await;
    // Under system:nodes the shipped Role lets it take a token (and count the Nodes for the cap).
    let me = std::slice::from_ref(&env.node);
    let held = wait_for(Duration::from_secs(60), || async {
        (!holders(&env, me).await.is_empty()).then_some(())
    })
    .await;
    assert!(
        held.is_ok(),
        "no token under the node identity\n{}",
        env.agent_log()
    );
    let done = wait_for(Duration::from_secs(60), || async {
        (golden_count(&env) == 1).then_some(())
    })
    .await;
    assert!(done.is_ok(), "never pre-pulled\n{}", env.agent_log());
    let log = std::fs::read_to_string(&env.log_path).unwrap_or_default();
    let refused: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("pre-pull") && l.to_lowercase().contains("forbidden"))
        .collect();
    assert!(
        refused.is_empty(),
        "the node identity was refused: {refused:?}"
    );
}
