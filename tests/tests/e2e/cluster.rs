//! Done-when tests of issue 3 on the shared control plane: it works for kubectl, Debian's
//! python3-kubernetes and kube-rs; the real scheduler binds a Pod to a Node kept alive by its
//! Lease, and the node lifecycle controller notices when the Lease stops; minted identities get
//! only what RBAC (or the Node authorizer) grants, and are audited. Each test isolates itself by
//! namespace and node name. Stop, watchdog, restart and timing: `cluster_lifecycle.rs`.
use std::time::Duration;

use k8s_openapi::{
    api::{
        coordination::v1::Lease,
        core::v1::{Namespace, Node, Pod},
        rbac::v1::{Role, RoleBinding},
    },
    apimachinery::pkg::apis::meta::v1::{MicroTime, Time},
    jiff::Timestamp,
};
use kube::{
    Api, Client, ResourceExt,
    api::{DeleteParams, ListParams, Patch, PatchParams, PostParams},
};
use serde_json::json;
use tart_kubelet_tests::cluster::testing::{create_namespace, run_program};
use tart_kubelet_tests::cluster::{self, ControlPlane, client_for, unique, wait_for};
use tokio::time::timeout;

/// Deadline for one API call in these tests.
const CALL: Duration = Duration::from_secs(20);

// === shared control plane ===

#[tokio::test]
async fn kubectl_and_debian_python_kubernetes_both_list_namespaces() {
    let cp = ControlPlane::shared_async().await;
    let client = cp.admin_client().await;
    let ns = unique("list-ns");
    create_namespace(&client, &ns).await;
    let kubeconfig = cp.kubeconfig_path();
    let kc = kubeconfig.to_str().unwrap();

    let (ok, out, err) =
        run_program("kubectl", &["--kubeconfig", kc, "get", "ns", "-o", "name"]).await;
    assert!(ok, "kubectl get ns failed: {err}");
    for want in [
        "namespace/default",
        "namespace/kube-node-lease",
        &format!("namespace/{ns}"),
    ] {
        assert!(
            out.lines().any(|l| l == want),
            "kubectl: no {want} in:\n{out}"
        );
    }

    // Debian's python3 (not a pyenv one on PATH), with Debian's python3-kubernetes.
    let script = "import sys\n\
        from kubernetes import client, config\n\
        config.load_kube_config(config_file=sys.argv[1])\n\
        for n in client.CoreV1Api().list_namespace(_request_timeout=20).items: print(n.metadata.name)";
    let (ok, out, err) = run_program("/usr/bin/python3", &["-c", script, kc]).await;
    assert!(ok, "python3-kubernetes failed: {err}");
    for want in ["default", "kube-node-lease", ns.as_str()] {
        assert!(
            out.lines().any(|l| l == want),
            "python: no {want} in:\n{out}"
        );
    }
}

/// Renews `kube-node-lease/<node>` every 2 s until aborted (as the agent's lease task does).
async fn renew_lease_forever(client: Client, node: Node) {
    let leases: Api<Lease> = Api::namespaced(client, "kube-node-lease");
    let name = node.name_any();
    let pp = PatchParams::apply("cluster-test").force();
    loop {
        let lease = json!({
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name, "namespace": "kube-node-lease",
                "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": name,
                    "uid": node.uid().unwrap()}]},
            "spec": {"holderIdentity": name, "leaseDurationSeconds": 40,
                "renewTime": MicroTime(Timestamp::now())},
        });
        match timeout(
            Duration::from_secs(5),
            leases.patch(&name, &pp, &Patch::Apply(&lease)),
        )
        .await
        {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => eprintln!("lease renewal failed: {e}"),
            Err(_) => eprintln!("lease renewal timed out"),
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

fn ready_status(node: &Node) -> Option<String> {
    let conds = node.status.as_ref()?.conditions.as_ref()?;
    conds
        .iter()
        .find(|c| c.type_ == "Ready")
        .map(|c| c.status.clone())
}

fn has_taint(node: &Node, key: &str) -> bool {
    let taints = node.spec.as_ref().and_then(|s| s.taints.as_ref());
    taints.is_some_and(|ts| ts.iter().any(|t| t.key == key))
}

#[tokio::test]
async fn node_with_fresh_lease_gets_the_pod_and_goes_unknown_when_the_lease_stops() {
    let cp = ControlPlane::shared();
    let grace: u64 = cp.env_var("NODE_GRACE").unwrap().parse().unwrap();
    let client = cp.admin_client().await;
    let nodes: Api<Node> = Api::all(client.clone());
    let node_name = unique("mini");
    let ns = unique("sched");
    create_namespace(&client, &ns).await;

    let node: Node = serde_json::from_value(json!({
        "metadata": {"name": node_name, "labels": {
            "type": "virtual-kubelet", "kubernetes.io/hostname": node_name,
            "kubernetes.io/os": "darwin", "kubernetes.io/arch": "arm64"}},
        "spec": {"taints": [{"key": "virtual-kubelet.io/provider", "value": "tart",
            "effect": "NoSchedule"}]},
    }))
    .unwrap();
    let node = timeout(CALL, nodes.create(&PostParams::default(), &node))
        .await
        .unwrap()
        .unwrap();
    let lease_task = tokio::spawn(renew_lease_forever(client.clone(), node.clone()));
    let now = Time(Timestamp::now());
    let status = json!({"status": {
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
            "message": "test", "lastHeartbeatTime": now, "lastTransitionTime": now}],
        "capacity": {"cpu": "8", "memory": "16Gi", "pods": "2"},
        "allocatable": {"cpu": "8", "memory": "16Gi", "pods": "2"},
    }});
    timeout(
        CALL,
        nodes.patch_status(&node_name, &PatchParams::default(), &Patch::Merge(&status)),
    )
    .await
    .unwrap()
    .expect("patch node status");
    let created = tokio::time::Instant::now();

    // The node lifecycle controller lifts the not-ready taint admission put on the new node.
    wait_for(Duration::from_secs(30), || async {
        let n = nodes.get(&node_name).await.ok()?;
        (!has_taint(&n, "node.kubernetes.io/not-ready")).then_some(())
    })
    .await
    .expect("the not-ready taint stays on a Ready node with a fresh lease");

    // The real scheduler binds a pod that selects and tolerates exactly this node.
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "runner"},
        "spec": {
            "nodeSelector": {"type": "virtual-kubelet", "kubernetes.io/hostname": node_name},
            "tolerations": [{"key": "virtual-kubelet.io/provider", "operator": "Exists",
                "effect": "NoSchedule"}],
            "containers": [{"name": "vm", "image": "ghcr.io/cirruslabs/macos-sequoia-base:latest"}],
        },
    }))
    .unwrap();
    timeout(CALL, pods.create(&PostParams::default(), &pod))
        .await
        .unwrap()
        .unwrap();
    let bound_to = wait_for(Duration::from_secs(60), || async {
        pods.get("runner").await.ok()?.spec?.node_name
    })
    .await
    .unwrap_or_else(|e| panic!("pod not bound: {e}\n{}", cp.log_tail("kube-scheduler", 15)));
    assert_eq!(bound_to, node_name);

    // The node status heartbeat is now older than the grace period: only the Lease keeps the
    // node Ready.
    tokio::time::sleep_until(created + Duration::from_secs(grace + 3)).await;
    let n = timeout(CALL, nodes.get(&node_name)).await.unwrap().unwrap();
    assert_eq!(
        ready_status(&n).as_deref(),
        Some("True"),
        "node lost Ready while its lease was fresh"
    );

    // Stop renewing: Ready=Unknown and the unreachable taint after about `grace` seconds.
    lease_task.abort();
    let stopped = tokio::time::Instant::now();
    wait_for(Duration::from_secs(grace + 30), || async {
        let n = nodes.get(&node_name).await.ok()?;
        let unknown = ready_status(&n).as_deref() == Some("Unknown");
        (unknown && has_taint(&n, "node.kubernetes.io/unreachable")).then_some(())
    })
    .await
    .unwrap_or_else(|e| {
        panic!(
            "node not marked unreachable: {e}\n{}",
            cp.log_tail("kube-controller-manager", 15)
        )
    });
    println!(
        "node went Ready=Unknown {:?} after its lease stopped (grace {grace} s)",
        stopped.elapsed()
    );
    assert!(
        stopped.elapsed() >= Duration::from_secs(grace.saturating_sub(3)),
        "marked too early"
    );

    let force = DeleteParams {
        grace_period_seconds: Some(0),
        ..DeleteParams::default()
    };
    let _ = timeout(CALL, pods.delete("runner", &force)).await;
    let _ = timeout(CALL, nodes.delete(&node_name, &DeleteParams::default())).await;
    let _ = timeout(
        CALL,
        Api::<Namespace>::all(client).delete(&ns, &DeleteParams::default()),
    )
    .await;
}

fn forbidden<T: std::fmt::Debug>(r: Result<T, kube::Error>) -> bool {
    matches!(r, Err(kube::Error::Api(ref s)) if s.code == 403)
}

#[tokio::test]
async fn minted_user_is_authenticated_but_may_only_do_what_rbac_grants_and_is_audited() {
    let cp = ControlPlane::shared();
    let admin = cp.admin_client().await;
    let (ns, other) = (unique("rbac"), unique("rbac-other"));
    create_namespace(&admin, &ns).await;
    create_namespace(&admin, &other).await;
    let user = unique("alice");
    let group = unique("team");
    let client = client_for(&cp.mint_kubeconfig(&user, &[&group])).await;

    let mine: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let r = timeout(CALL, mine.list(&ListParams::default()))
        .await
        .unwrap();
    assert!(forbidden(r), "a fresh user could list pods");

    let role: Role = serde_json::from_value(json!({
        "metadata": {"name": "pod-reader"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}],
    }))
    .unwrap();
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "pod-reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}],
    }))
    .unwrap();
    let pp = PostParams::default();
    timeout(
        CALL,
        Api::<Role>::namespaced(admin.clone(), &ns).create(&pp, &role),
    )
    .await
    .unwrap()
    .unwrap();
    timeout(
        CALL,
        Api::<RoleBinding>::namespaced(admin.clone(), &ns).create(&pp, &binding),
    )
    .await
    .unwrap()
    .unwrap();

    // Granted through the group in the certificate's O field, in that namespace only.
    wait_for(Duration::from_secs(10), || async {
        mine.list(&ListParams::default()).await.ok()
    })
    .await
    .expect("the group's RoleBinding never took effect");
    let theirs: Api<Pod> = Api::namespaced(client, &other);
    let r = timeout(CALL, theirs.list(&ListParams::default()))
        .await
        .unwrap();
    assert!(forbidden(r), "the grant leaked into another namespace");

    // The audit log names the user of each completed request, with its verb and code.
    let audit = cp.logs_dir().join("audit.log");
    let uri = format!("/api/v1/namespaces/{other}/pods");
    wait_for(Duration::from_secs(10), || async {
        let log = std::fs::read_to_string(&audit).ok()?;
        log.lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .any(|e| {
                e["stage"] == "ResponseComplete"
                    && e["user"]["username"] == user.as_str()
                    && e["verb"] == "list"
                    && e["requestURI"]
                        .as_str()
                        .is_some_and(|u| u.starts_with(&uri))
                    && e["responseStatus"]["code"] == 403
            })
            .then_some(())
    })
    .await
    .expect("no audit event for the forbidden list");
}

#[tokio::test]
async fn node_identity_may_register_its_own_node_but_not_another() {
    let cp = ControlPlane::shared();
    let name = unique("mini-self");
    let user = format!("system:node:{name}");
    let client = client_for(&cp.mint_kubeconfig(&user, &["system:nodes"])).await;
    let nodes: Api<Node> = Api::all(client);
    let node = |n: &str| -> Node {
        serde_json::from_value(
            json!({"metadata": {"name": n, "labels": {"type": "virtual-kubelet"}}}),
        )
        .unwrap()
    };
    let pp = PostParams::default();
    timeout(CALL, nodes.create(&pp, &node(&name)))
        .await
        .unwrap()
        .expect("Node authorizer + NodeRestriction let a node create itself");
    let r = timeout(CALL, nodes.create(&pp, &node(&unique("mini-other"))))
        .await
        .unwrap();
    assert!(forbidden(r), "a node identity created another node");
    let admin = cp.admin_client().await;
    let _ = timeout(
        CALL,
        Api::<Node>::all(admin).delete(&name, &DeleteParams::default()),
    )
    .await;
}

#[tokio::test]
async fn mint_refuses_names_that_openssl_would_misparse() {
    let cp = ControlPlane::shared_async().await;
    let mint = cluster::scripts_dir().join("mint-kubeconfig.sh");
    let run_dir = cp.run_dir().to_str().unwrap();
    for bad in ["a/CN=admin", "a,b", "-rf", ""] {
        let (ok, _, err) = run_program(mint.to_str().unwrap(), &[run_dir, "user", bad]).await;
        assert!(
            !ok && err.contains("invalid group name"),
            "group {bad:?}: {err}"
        );
    }
    let (ok, _, err) = run_program(mint.to_str().unwrap(), &[run_dir, "x/O=system:masters"]).await;
    assert!(!ok && err.contains("invalid user name"), "{err}");
}
