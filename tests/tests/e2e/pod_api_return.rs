//! End-to-end: after an API server outage long enough for the Pod watch's retries to spread
//! out, a Pod created as soon as the API server answers `/readyz` again is acted on within
//! 2 s (the agent's first act on a new Pod is adding its finalizer).
//!
//! Run: `cargo test -p tart-kubelet-tests --test e2e pod_api_return:: -- --nocapture`

use crate::node_support;

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::{Api, ResourceExt, api::PostParams};
use node_support::*;
use tart_kubelet_tests::{
    agent::Agent,
    cluster::{unique, wait_for},
    fake::FakeHome,
};

/// How soon after the API server's return a new Pod must be acted on.
const CURRENT_WITHIN: Duration = Duration::from_secs(2);

/// The finalizer the agent adds to every Pod it runs (docs/pods.md).
const FINALIZER: &str = "tart.run/vm";

/// Create Pod `name` bound to `node` and wait until the agent has acted on it; returns when
/// that was first seen.
async fn create_and_wait_acted_on(
    pods: &Api<Pod>,
    name: &str,
    node: &str,
    agent: &Agent,
) -> Instant {
    pods.create(&PostParams::default(), &vm_pod(name, node, true))
        .await
        .unwrap();
    wait_for(Duration::from_secs(60), || async {
        let p = pods.get_opt(name).await.ok()??;
        p.finalizers()
            .iter()
            .any(|f| f == FINALIZER)
            .then(Instant::now)
    })
    .await
    .unwrap_or_else(|e| panic!("Pod {name} was never acted on: {e}\n{}", agent.log_tail(40)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_pod_is_acted_on_within_2s_of_the_api_servers_return() {
    let cp = private("pod-api-return").await;
    let name = unique("pod-api-return");
    let agent = start(&cp, &name, FakeHome::new().unwrap(), &[]).await;
    let admin = cp.admin_client().await;
    wait_condition(&admin, &agent, "Ready", "True", Duration::from_secs(90)).await;
    let pods: Api<Pod> = Api::namespaced(admin.clone(), "default");
    // The Pod watch has listed (it acts on a Pod) before the outage.
    create_and_wait_acted_on(&pods, "before", &name, &agent).await;

    // Long enough for a doubling retry curve to reach long delays.
    cp.stop_apiserver().await;
    wait_lease_age(&agent, 20).await;
    cp.start_apiserver().await;
    let back = Instant::now();

    let acted = create_and_wait_acted_on(&pods, "after", &name, &agent).await;
    let took = acted.duration_since(back);
    eprintln!("figure: API back (/readyz) -> new Pod acted on in {took:?}");
    assert!(
        took <= CURRENT_WITHIN,
        "the new Pod was acted on {took:?} after the API server's return\n{}",
        agent.log_tail(40)
    );
}
