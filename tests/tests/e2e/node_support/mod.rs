//! Shared helpers of the node-side end-to-end tests (node_e2e.rs, node_endpoints.rs,
//! node_survive.rs, pod_api_return.rs): the agent under `packaging/kubernetes/rbac.yaml` with a
//! minted identity, kubectl, waits on Node conditions and the Lease's age, and a VM Pod.

use std::{
    collections::BTreeSet,
    path::{Path, PathBuf},
    time::Duration,
};

use k8s_openapi::api::core::v1::{Container, Node, Pod, PodSpec, Toleration};
use kube::{Api, Client, api::ObjectMeta};
use tart_kubelet_tests::{
    agent::{Agent, AgentOptions, rbac_yaml},
    cluster::{ControlPlane, wait_for},
    fake::FakeHome,
};

pub(crate) const AGENT: &str = env!("CARGO_BIN_EXE_agent-under-test");
pub(crate) const FAKE_TART: &str = env!("CARGO_BIN_EXE_fake-tart");
/// Faster than production so tests finish quickly; still within the 16 s node grace of the
/// test control plane.
pub(crate) const FAST: [&str; 8] = [
    "--lease-renew-interval",
    "3s",
    "--lease-duration",
    "12s",
    "--node-status-check-interval",
    "2s",
    "--api-timeout",
    "5s",
];

pub(crate) async fn shared() -> &'static ControlPlane {
    tokio::task::spawn_blocking(ControlPlane::shared)
        .await
        .expect("control plane start panicked")
}

/// A control plane of the test's own (stopped on drop), built first if needed.
pub(crate) async fn private(label: &'static str) -> ControlPlane {
    tokio::task::spawn_blocking(move || {
        tart_kubelet_tests::cluster::build().expect("control plane binaries");
        ControlPlane::start_private(label)
    })
    .await
    .unwrap()
    .expect("private control plane")
}

pub(crate) async fn kubectl(kubeconfig: &Path, args: &[&str]) -> anyhow::Result<String> {
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::process::Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(args)
            .kill_on_drop(true)
            .output(),
    )
    .await??;
    anyhow::ensure!(
        out.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Apply rbac.yaml to `cp`, once per control plane in this process: every agent start asks
/// for it, and the tests share the control plane. The tests of this process apply one at a
/// time; the apply is idempotent and retried because other processes may apply at the same
/// time.
pub(crate) async fn apply_rbac(cp: &ControlPlane) {
    static APPLIED: tokio::sync::Mutex<BTreeSet<PathBuf>> =
        tokio::sync::Mutex::const_new(BTreeSet::new());
    let kubeconfig = cp.kubeconfig_path();
    let mut applied = APPLIED.lock().await;
    if applied.contains(&kubeconfig) {
        return;
    }
    let yaml = rbac_yaml();
    let path = yaml.to_str().expect("utf-8 path");
    wait_for(Duration::from_secs(60), || async {
        kubectl(&kubeconfig, &["apply", "-f", path]).await.ok()
    })
    .await
    .expect("kubectl apply rbac.yaml");
    applied.insert(kubeconfig);
}

/// A kubeconfig for this node's own identity in group `tart-kubelets` (rbac.yaml).
pub(crate) async fn agent_kubeconfig(cp: &ControlPlane, node: &str) -> std::path::PathBuf {
    apply_rbac(cp).await;
    let user = format!("tart-kubelet-{node}");
    cp.mint_kubeconfig(&user, &["tart-kubelets"])
}

pub(crate) async fn start(cp: &ControlPlane, node: &str, home: FakeHome, extra: &[&str]) -> Agent {
    let kc = agent_kubeconfig(cp, node).await;
    let opts = AgentOptions::new(AGENT, FAKE_TART, kc, node)
        .args(FAST)
        .args(extra.iter().copied());
    Agent::start_with_home(opts, home)
        .await
        .expect("agent starts")
}

pub(crate) fn condition<'a>(
    n: &'a Node,
    type_: &str,
) -> Option<&'a k8s_openapi::api::core::v1::NodeCondition> {
    n.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
}

pub(crate) fn status_of(n: &Node, type_: &str) -> Option<String> {
    condition(n, type_).map(|c| c.status.clone())
}

/// Wait until the Node's condition `type_` has `status`; returns the Node.
pub(crate) async fn wait_condition(
    client: &Client,
    agent: &Agent,
    type_: &str,
    status: &str,
    within: Duration,
) -> Node {
    let nodes: Api<Node> = Api::all(client.clone());
    let name = agent.node_name().to_owned();
    wait_for(within, || async {
        let n = nodes.get_opt(&name).await.ok()??;
        (status_of(&n, type_).as_deref() == Some(status)).then_some(n)
    })
    .await
    .unwrap_or_else(|e| {
        panic!(
            "node {name} never had {type_}={status}: {e}\nagent log:\n{}",
            agent.log_tail(40)
        )
    })
}

/// Seconds since the agent's last Lease renewal, as its `/readyz` reports it.
pub(crate) async fn lease_age(agent: &Agent) -> Option<u64> {
    let body = agent.get("/readyz").await.ok()?.body;
    let rest = body.split("the Lease was last renewed ").nth(1)?;
    rest.split('s').next()?.parse().ok()
}

/// Wait (within 90 s) until the agent's Lease is at least `secs` old: an API server outage
/// has lasted that long.
pub(crate) async fn wait_lease_age(agent: &Agent, secs: u64) {
    wait_for(Duration::from_secs(90), || async {
        lease_age(agent).await.filter(|a| *a >= secs)
    })
    .await
    .unwrap_or_else(|e| {
        panic!(
            "lease age never reached {secs} s: {e}\n{}",
            agent.log_tail(20)
        )
    });
}

/// A VM Pod in `default` bound to `node` (`nodeName`, every taint tolerated), or left to the
/// scheduler with a selector for it.
pub(crate) fn vm_pod(name: &str, node: &str, bound: bool) -> Pod {
    let mut spec = PodSpec {
        automount_service_account_token: Some(false),
        termination_grace_period_seconds: Some(5),
        containers: vec![Container {
            name: "vm".into(),
            image: Some("ghcr.io/cirruslabs/macos-sequoia-base:latest".into()),
            ..Container::default()
        }],
        ..PodSpec::default()
    };
    if bound {
        spec.node_name = Some(node.into());
        spec.tolerations = Some(vec![Toleration {
            operator: Some("Exists".into()),
            ..Toleration::default()
        }]);
    } else {
        spec.node_selector = Some([("kubernetes.io/hostname".to_owned(), node.to_owned())].into());
        // Only the provider taint: an `unreachable` taint left on the Node keeps it Pending.
        spec.tolerations = Some(vec![Toleration {
            key: Some("virtual-kubelet.io/provider".into()),
            operator: Some("Exists".into()),
            ..Toleration::default()
        }]);
    }
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        spec: Some(spec),
        status: None,
    }
}
