//! End to end: the Node labels kubelet's `--node-labels` allows reach the Node under both
//! identities (the agent's own, authorized by the shipped RBAC; the node's, where the
//! NodeRestriction admission plugin checks a node's labels on itself), the Mac's model is the
//! default `node.kubernetes.io/instance-type`, `kubeletVersion` is the agent's own version, and
//! a key kubelet refuses stops the agent at start-up with the rule named.
//!
//! Run: `cargo test -p tart-kubelet-tests --test e2e node_labels:: -- --nocapture`

use crate::pod_support;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Node;
use kube::Api;
use pod_support::{Env, WAIT};
use tart_kubelet_tests::{
    cluster::{testing::run_program, wait_for},
    fake::Knobs,
};

const LABELS: &str = "topology.kubernetes.io/zone=rack-3,topology.kubernetes.io/region=site-a,\
node.kubernetes.io/instance-type=mac-mini-m2,kubelet.kubernetes.io/pool=ios,team=ios";

/// Starts `env`'s agent and waits for its Node to carry every label of [`LABELS`].
async fn labelled_node(mut env: Env) -> (Env, Node) {
    env.start_agent();
    let nodes: Api<Node> = Api::all(env.admin.clone());
    let want: BTreeMap<&str, &str> = LABELS
        .split(',')
        .filter_map(|kv| kv.split_once('='))
        .collect();
    let node = wait_for(WAIT, || async {
        let n = nodes.get_opt(&env.node).await.ok().flatten()?;
        let labels = n.metadata.labels.clone().unwrap_or_default();
        want.iter()
            .all(|(k, v)| labels.get(*k).map(String::as_str) == Some(*v))
            .then_some(n)
    })
    .await;
    let Ok(node) = node else {
        panic!("the Node never carried {LABELS}\n{}", env.agent_log());
    };
    (env, node)
}

fn kubelet_version(n: &Node) -> String {
    n.status
        .as_ref()
        .and_then(|s| s.node_info.as_ref())
        .map(|i| i.kubelet_version.clone())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allowed_labels_reach_the_node_under_the_agents_identity() {
    let env = Env::new("labels", Knobs::new(), &["--node-label", LABELS]).await;
    let (env, _) = labelled_node(env).await;
    // `kubectl get nodes` shows the agent's own version in its VERSION column.
    let nodes: Api<Node> = Api::all(env.admin.clone());
    let node = wait_for(WAIT, || async {
        let n = nodes.get_opt(&env.node).await.ok().flatten()?;
        (!kubelet_version(&n).is_empty()).then_some(n)
    })
    .await
    .expect("node status");
    let want = format!("v{}-tart-kubelet", env!("CARGO_PKG_VERSION"));
    assert_eq!(kubelet_version(&node), want);
    let kc = env.cp.kubeconfig_path().display().to_string();
    let (ok, out, err) = run_program(
        "kubectl",
        &[
            "--kubeconfig",
            &kc,
            "get",
            "node",
            &env.node,
            "--no-headers",
        ],
    )
    .await;
    assert!(ok, "{err}");
    assert!(out.contains(&want), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allowed_labels_reach_the_node_under_the_node_identity() {
    let env = Env::new_as_node("labelsnode", Knobs::new(), &["--node-label", LABELS]).await;
    let (env, node) = labelled_node(env).await;
    let labels = node.metadata.labels.unwrap_or_default();
    assert_eq!(labels["kubernetes.io/os"], "darwin", "{labels:?}");
    assert!(
        !env.agent_log().contains("is not allowed to modify labels"),
        "{}",
        env.agent_log()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_is_the_default_instance_type() {
    let env = Env::new("labelsmodel", Knobs::new(), &[]).await;
    let mut env = env;
    env.start_agent();
    let nodes: Api<Node> = Api::all(env.admin.clone());
    let labels = wait_for(WAIT, || async {
        let n = nodes.get_opt(&env.node).await.ok().flatten()?;
        let l = n.metadata.labels.unwrap_or_default();
        l.contains_key("tart.run/model").then_some(l)
    })
    .await
    .unwrap_or_else(|_| panic!("no tart.run/model label\n{}", env.agent_log()));
    assert_eq!(
        labels.get("node.kubernetes.io/instance-type"),
        labels.get("tart.run/model"),
        "{labels:?}"
    );
}

#[test]
fn a_label_kubelet_refuses_stops_the_agent_with_the_rule_named() {
    for (label, says) in [
        (
            "node-role.kubernetes.io/worker=",
            "keys in the kubernetes.io and k8s.io namespaces must begin with an allowed prefix",
        ),
        ("kubernetes.io/os=linux", "set by the agent"),
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_agent-under-test"))
            .args(["--node-label", label, "--kubeconfig", "/nonexistent"])
            .env_remove("TART_KUBELET_NODE_LABELS")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{label}: {stderr}");
        let key = label.split('=').next().unwrap();
        assert!(
            stderr.contains(says) && stderr.contains(key),
            "{label}: {stderr}"
        );
    }
}
