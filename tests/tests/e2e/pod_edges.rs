//! Pods at the edges of what Kubernetes allows: the longest valid name, and resources the
//! image refuses. Real control plane, real agent, fake-tart.

use crate::pod_support;

use k8s_openapi::{
    api::core::v1::ResourceRequirements, apimachinery::pkg::api::resource::Quantity,
};
use pod_support::{Env, phase, ready, waiting_reason};
use tart_kubelet_tests::fake::Knobs;

fn knobs() -> Knobs {
    Knobs::new().with_latency_scale(0.001)
}

/// A valid Pod name of 253 characters (four DNS labels).
fn longest_name() -> String {
    let l = |c: &str, n| c.repeat(n);
    format!(
        "{}.{}.{}.{}",
        l("a", 63),
        l("b", 63),
        l("c", 63),
        l("d", 61)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_with_the_longest_valid_name_runs_and_every_event_is_published() {
    let mut env = Env::new("longname", knobs(), &[]).await;
    env.start_agent();
    let name = longest_name();
    assert_eq!(name.len(), 253);
    env.create(&env.pod(&name)).await;
    env.wait_pod(&name, "Running", |p| phase(p) == "Running" && ready(p))
        .await;
    let evs = env.wait_event(&name, "Started").await;
    let reasons: Vec<&str> = evs.iter().map(|(_, r, _)| r.as_str()).collect();
    for want in ["CreatingVM", "Pulling", "Pulled", "Created", "Started"] {
        assert!(reasons.contains(&want), "no {want} in {reasons:?}");
    }
    assert_eq!(
        env.metric("tart_kubelet_api_errors_total{resource=\"event\",kind=\"invalid\"}")
            .await,
        Some(0.0),
        "an event was refused"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fewer_cpus_than_the_image_allows_waits_with_create_container_config_error() {
    let mut env = Env::new("mincpu", knobs(), &[]).await;
    env.start_agent();
    let mut pod = env.pod("small");
    pod.spec.as_mut().unwrap().containers[0].resources = Some(ResourceRequirements {
        limits: Some([("cpu".to_string(), Quantity("1".into()))].into()),
        ..ResourceRequirements::default()
    });
    env.create(&pod).await;
    let p = env
        .wait_pod("small", "CreateContainerConfigError", |p| {
            waiting_reason(p).as_deref() == Some("CreateContainerConfigError")
        })
        .await;
    assert_eq!(phase(&p), "Pending", "waits, never Failed");
    let waiting = p.status.unwrap().container_statuses.unwrap()[0]
        .state
        .clone()
        .unwrap()
        .waiting
        .unwrap();
    let message = waiting.message.unwrap_or_default();
    assert!(
        message.starts_with("LessThanMinimalResourcesError: VM should have 4 CPU cores"),
        "{message}"
    );
    let evs = env.wait_event("small", "Failed").await;
    let (t, _, note) = evs.iter().find(|(_, r, _)| r == "Failed").unwrap();
    assert_eq!(t, "Warning");
    assert!(
        note.starts_with("Error: LessThanMinimalResourcesError"),
        "{note}"
    );
    assert!(!note.contains("Error: Error:"), "{note}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_past_its_active_deadline_fails_and_its_vm_is_stopped() {
    let mut env = Env::new("deadline", knobs(), &[]).await;
    env.start_agent();
    let mut pod = env.pod("deadline");
    // Long enough for the VM to start first (pull, golden, clone, run) while the rest of the
    // suite runs beside it, 4 tests at a time: 8 s was not, once in a whole-suite run.
    pod.spec.as_mut().unwrap().active_deadline_seconds = Some(15);
    let created = env.create(&pod).await;
    let p = env
        .wait_pod("deadline", "Failed", |p| phase(p) == "Failed")
        .await;
    let t = pod_support::terminated(&p).expect("the stopped run is the container's end");
    pod_support::assert_agent_stopped(&t, "activeDeadlineSeconds");
    let status = p.status.unwrap();
    assert_eq!(status.reason.as_deref(), Some("DeadlineExceeded"));
    assert_eq!(
        status.message.as_deref(),
        Some("Pod was active on the node longer than the specified deadline")
    );
    let evs = env.wait_event("deadline", "DeadlineExceeded").await;
    assert!(
        pod_support::in_order(&evs, &["Started", "Killing", "DeadlineExceeded"]),
        "{evs:?}"
    );
    assert!(
        !env.home.is_running(&Env::vm_of(&created)),
        "the VM still runs"
    );
}
