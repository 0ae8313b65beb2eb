//! End-to-end tests of the node side on the real control plane, with the agent under
//! `packaging/kubernetes/rbac.yaml` (a minted client certificate in group `tart-kubelets`,
//! never the admin) and `fake-tart` as tart.

use crate::node_support;

use std::time::Duration;

use k8s_openapi::api::{
    coordination::v1::Lease,
    core::v1::Node,
    rbac::v1::{ClusterRole, ClusterRoleBinding, RoleBinding, RoleRef, Subject},
};
use kube::{
    Api,
    api::{ObjectMeta, PostParams},
};
use node_support::*;
use tart_kubelet_tests::{
    agent::{Agent, AgentOptions},
    cluster::{unique, wait_for},
    fake::{FakeHome, Knobs, Rule},
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_registers_a_ready_node_with_labels_taint_capacity_and_lease() {
    let cp = shared().await;
    let name = unique("node-reg");
    let agent = start(
        cp,
        &name,
        FakeHome::new().unwrap(),
        &["--node-label", "tart.run/pool=e2e"],
    )
    .await;
    let admin = cp.admin_client().await;
    let node = wait_condition(&admin, &agent, "Ready", "True", Duration::from_secs(90)).await;

    let labels = node.metadata.labels.clone().unwrap_or_default();
    for (k, v) in [
        ("kubernetes.io/os", "darwin"),
        ("kubernetes.io/arch", "arm64"),
        ("kubernetes.io/hostname", name.as_str()),
        ("type", "virtual-kubelet"),
        ("tart.run/tart-version", "2.35.0"),
        ("tart.run/pool", "e2e"),
    ] {
        assert_eq!(
            labels.get(k).map(String::as_str),
            Some(v),
            "label {k} in {labels:?}"
        );
    }
    assert!(labels.contains_key("tart.run/macos-version"), "{labels:?}");
    let spec = node.spec.clone().unwrap();
    assert_eq!(
        spec.provider_id.as_deref(),
        Some(format!("tart://{name}").as_str())
    );
    let taints = spec.taints.unwrap_or_default();
    assert!(
        taints.iter().any(|t| t.key == "virtual-kubelet.io/provider"
            && t.value.as_deref() == Some("tart")
            && t.effect == "NoSchedule"),
        "{taints:?}"
    );
    let status = node.status.clone().unwrap();
    let cap = status.capacity.unwrap();
    let alloc = status.allocatable.unwrap();
    assert_eq!(cap["tart.run/vm-slots"].0, "2");
    for r in ["cpu", "memory", "ephemeral-storage", "pods"] {
        assert!(
            cap.contains_key(r) && alloc.contains_key(r),
            "{r} in {cap:?}"
        );
    }
    assert_ne!(
        cap["memory"], alloc["memory"],
        "allocatable memory keeps a reserve"
    );
    let info = status.node_info.unwrap();
    assert_eq!(info.container_runtime_version, "tart://2.35.0");
    assert_eq!(info.operating_system, "darwin");

    // What an operator sees.
    let get = kubectl(&cp.kubeconfig_path(), &["get", "node", &name])
        .await
        .unwrap();
    let row = get
        .lines()
        .find(|l| l.starts_with(&name))
        .unwrap_or_default()
        .to_owned();
    assert_eq!(row.split_whitespace().nth(1), Some("Ready"), "{get}");
    let describe = kubectl(&cp.kubeconfig_path(), &["describe", "node", &name])
        .await
        .unwrap();
    for needle in [
        "MemoryPressure",
        "KubeletHasSufficientMemory",
        "DiskPressure",
        "KubeletHasNoDiskPressure",
        "PIDPressure",
        "KubeletHasSufficientPID",
        "TartReady",
        "tart 2.35.0 is usable",
        "KubeletReady",
        "virtual-kubelet.io/provider=tart:NoSchedule",
    ] {
        assert!(describe.contains(needle), "{needle} missing in\n{describe}");
    }

    // The heartbeat Lease, owned by the Node.
    let leases: Api<Lease> = Api::namespaced(admin.clone(), "kube-node-lease");
    let lease = leases.get(&name).await.expect("lease exists");
    let ls = lease.spec.unwrap();
    // Held by this agent instance: the node name plus an id of its own.
    let holder = ls.holder_identity.unwrap_or_default();
    assert!(holder.starts_with(&format!("{name}_")), "holder {holder}");
    assert_eq!(ls.lease_duration_seconds, Some(12));
    let owners = lease.metadata.owner_references.unwrap_or_default();
    assert_eq!(
        owners.first().map(|o| o.uid.as_str()),
        node.metadata.uid.as_deref()
    );

    let ok = agent
        .metric("tart_kubelet_node_lease_renewals_total{outcome=\"ok\"}")
        .await
        .unwrap();
    assert!(ok >= 1.0, "lease renewals counted: {ok}");
    // Kubelet-style node events.
    wait_for(Duration::from_secs(30), || async {
        let d = kubectl(&cp.kubeconfig_path(), &["describe", "node", &name])
            .await
            .ok()?;
        (d.contains("Starting") && d.contains("NodeReady") && d.contains("NodeHasSufficientMemory"))
            .then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("node events missing: {e}\n{}", agent.log_tail(30)));
    if std::env::var_os("SHOW_AGENT_LOG").is_some() {
        eprintln!("{}", agent.log());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopped_agent_goes_not_ready_and_restarted_agent_is_ready_on_the_same_node() {
    let cp = shared().await;
    let name = unique("node-life");
    let mut agent = start(
        cp,
        &name,
        FakeHome::new().unwrap(),
        &["--node-label", "tart.run/pool=life"],
    )
    .await;
    let admin = cp.admin_client().await;
    let before = wait_condition(&admin, &agent, "Ready", "True", Duration::from_secs(90)).await;

    let t0 = std::time::Instant::now();
    agent.sigterm().unwrap();
    let st = agent
        .wait_exit(Duration::from_secs(5))
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", agent.log_tail(30)));
    assert!(
        st.success(),
        "clean exit on SIGTERM: {st:?}\n{}",
        agent.log_tail(30)
    );
    eprintln!("SIGTERM -> exit in {:?}", t0.elapsed());

    // The node lifecycle controller (grace 16 s here) marks the silent node Unknown.
    let stale = wait_condition(&admin, &agent, "Ready", "Unknown", Duration::from_secs(60)).await;
    assert_eq!(
        stale.metadata.uid, before.metadata.uid,
        "node not deleted on shutdown"
    );

    agent.restart().unwrap();
    let after = wait_condition(&admin, &agent, "Ready", "True", Duration::from_secs(90)).await;
    assert_eq!(after.metadata.uid, before.metadata.uid, "same Node object");
    let labels = after.metadata.labels.unwrap_or_default();
    assert_eq!(
        labels.get("tart.run/pool").map(String::as_str),
        Some("life")
    );
    assert_eq!(
        labels.get("type").map(String::as_str),
        Some("virtual-kubelet")
    );
    let unknown = condition(&stale, "Ready").unwrap().clone();
    let first_ready = condition(&before, "Ready").unwrap().clone();
    let now_ready = {
        let nodes: Api<Node> = Api::all(admin.clone());
        let n = nodes.get(&name).await.unwrap();
        condition(&n, "Ready").unwrap().clone()
    };
    assert_eq!(now_ready.reason.as_deref(), Some("KubeletReady"));
    // Unknown -> True is a transition: not the first registration's time copied back.
    assert!(now_ready.last_transition_time >= unknown.last_transition_time);
    assert!(now_ready.last_transition_time > first_ready.last_transition_time);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lease_is_renewed_while_tart_hangs_and_the_node_says_why_it_is_not_ready() {
    let cp = shared().await;
    let name = unique("node-hang");
    let home = FakeHome::new().unwrap();
    home.set_knobs(&Knobs::new().with_rule(Rule::hang("version")))
        .unwrap();
    let agent = start(cp, &name, home, &[]).await;
    let admin = cp.admin_client().await;

    let node = wait_condition(
        &admin,
        &agent,
        "TartReady",
        "False",
        Duration::from_secs(90),
    )
    .await;
    assert_eq!(
        condition(&node, "TartReady").unwrap().reason.as_deref(),
        Some("TartNotWorking")
    );
    assert_eq!(status_of(&node, "Ready").as_deref(), Some("False"));
    assert_eq!(
        condition(&node, "Ready").unwrap().reason.as_deref(),
        Some("KubeletNotReady")
    );

    // Every status tick runs into the hanging `tart --version`; the Lease must not care.
    let leases: Api<Lease> = Api::namespaced(admin.clone(), "kube-node-lease");
    let renew_time = |l: Lease| l.spec.and_then(|s| s.renew_time);
    let mut last = renew_time(leases.get(&name).await.unwrap()).expect("renewTime");
    for _ in 0..3 {
        last = wait_for(Duration::from_secs(15), || async {
            let t = renew_time(leases.get(&name).await.ok()?)?;
            (t != last).then_some(t)
        })
        .await
        .unwrap_or_else(|e| panic!("lease stalled behind tart: {e}\n{}", agent.log_tail(30)));
    }
    assert!(
        agent.pid().is_some(),
        "agent keeps running with an unusable tart"
    );
    let ready = agent.get("/readyz").await.unwrap();
    assert_eq!(ready.status, 503);
    assert!(ready.body.contains("[-]tart failed"), "{}", ready.body);
    assert!(ready.body.contains("[+]lease ok"), "{}", ready.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_nodes_status_permission_logs_the_verb_and_resource() {
    let cp = shared().await;
    apply_rbac(cp).await;
    let name = unique("node-rbac");
    let group = unique("no-status");
    let admin = cp.admin_client().await;

    // rbac.yaml's ClusterRole minus the nodes/status rule, bound to a group of our own.
    let roles: Api<ClusterRole> = Api::all(admin.clone());
    let full = roles.get("tart-kubelet").await.unwrap();
    let rules = full
        .rules
        .unwrap_or_default()
        .into_iter()
        .filter(|r| !r.resources.iter().flatten().any(|x| x == "nodes/status"))
        .collect();
    let pp = PostParams::default();
    let meta = |n: &str| ObjectMeta {
        name: Some(n.into()),
        ..ObjectMeta::default()
    };
    roles
        .create(
            &pp,
            &ClusterRole {
                metadata: meta(&group),
                rules: Some(rules),
                ..ClusterRole::default()
            },
        )
        .await
        .unwrap();
    let subject = Subject {
        api_group: Some("rbac.authorization.k8s.io".into()),
        kind: "Group".into(),
        name: group.clone(),
        namespace: None,
    };
    Api::<ClusterRoleBinding>::all(admin.clone())
        .create(
            &pp,
            &ClusterRoleBinding {
                metadata: meta(&group),
                role_ref: RoleRef {
                    api_group: Some("rbac.authorization.k8s.io".into()),
                    kind: "ClusterRole".into(),
                    name: group.clone(),
                },
                subjects: Some(vec![subject.clone()]),
            },
        )
        .await
        .unwrap();
    Api::<RoleBinding>::namespaced(admin.clone(), "kube-node-lease")
        .create(
            &pp,
            &RoleBinding {
                metadata: meta(&group),
                role_ref: RoleRef {
                    api_group: Some("rbac.authorization.k8s.io".into()),
                    kind: "Role".into(),
                    name: "tart-kubelet-lease".into(),
                },
                subjects: Some(vec![subject]),
            },
        )
        .await
        .unwrap();
    let kc = cp.mint_kubeconfig(&format!("tart-kubelet-{name}"), &[&group]);
    let opts = AgentOptions::new(AGENT, FAKE_TART, kc, &name).args(FAST);
    let agent = Agent::start(opts).await.unwrap();

    wait_for(Duration::from_secs(60), || async {
        agent
            .log()
            .contains("forbidden: cannot patch nodes/status")
            .then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", agent.log_tail(40)));
    let lines = agent
        .log()
        .lines()
        .filter(|l| l.contains("forbidden: cannot patch nodes/status"))
        .count();
    // The node still registered and heartbeats through its Lease; the log line is not repeated.
    let leases: Api<Lease> = Api::namespaced(admin.clone(), "kube-node-lease");
    wait_for(Duration::from_secs(30), || async {
        leases.get_opt(&name).await.ok()?
    })
    .await
    .unwrap();
    assert_eq!(lines, 1, "logged once:\n{}", agent.log_tail(40));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_node_is_registered_again_at_once() {
    let cp = shared().await;
    let name = unique("node-del");
    // Production status intervals: the re-registration must come from the Node watch, not
    // from a periodic write.
    let kc = agent_kubeconfig(cp, &name).await;
    let opts =
        AgentOptions::new(AGENT, FAKE_TART, kc, &name).args(["--lease-renew-interval", "3s"]);
    let agent = Agent::start(opts).await.unwrap();
    let admin = cp.admin_client().await;
    let first = wait_condition(&admin, &agent, "Ready", "True", Duration::from_secs(90)).await;
    let nodes: Api<Node> = Api::all(admin.clone());
    nodes.delete(&name, &Default::default()).await.unwrap();
    let old_uid = first.metadata.uid.clone();
    let again = wait_for(Duration::from_secs(30), || async {
        let n = nodes.get_opt(&name).await.ok()??;
        (n.metadata.uid != old_uid && status_of(&n, "Ready").as_deref() == Some("True"))
            .then_some(n)
    })
    .await
    .unwrap_or_else(|e| panic!("node not re-registered: {e}\n{}", agent.log_tail(30)));
    // The Lease follows the new Node.
    let leases: Api<Lease> = Api::namespaced(admin.clone(), "kube-node-lease");
    wait_for(Duration::from_secs(30), || async {
        let l = leases.get_opt(&name).await.ok()??;
        let owner = l.metadata.owner_references?.first()?.uid.clone();
        (Some(owner) == again.metadata.uid).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("lease not re-owned: {e}\n{}", agent.log_tail(30)));
}

/// Between its writes, the agent checks its Node every 2 s (FAST); with nothing changed it
/// writes the status only once the report interval (5 min) has passed, as kubelet does:
/// after the start-up writes, the API server's audit log shows Lease renewals and no
/// `patch nodes/status` (the empty image inventory, which the server omits, once counted as
/// a change on every check).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unchanged_node_status_is_not_written_again_inside_the_report_interval() {
    use tart_kubelet_tests::sandbox::{probe::now_rfc3339, report::requests::Purpose};
    let cp = shared().await;
    let name = unique("node-quiet");
    let agent = start(
        cp,
        &name,
        FakeHome::new().unwrap(),
        &["--node-status-report-interval", "5m"],
    )
    .await;
    let admin = cp.admin_client().await;
    wait_condition(&admin, &agent, "Ready", "True", Duration::from_secs(90)).await;
    let audit = AgentAudit {
        log: cp.logs_dir().join("audit.log"),
        user: format!("tart-kubelet-{name}"),
    };
    // The start-up writes (first status, first image inventory, pre-pull declaration) settle.
    audit.wait_renewals(&agent, &now_rfc3339(), 3).await;
    let window = now_rfc3339();
    // Five renewals, one each 3 s: seven or more status checks.
    audit.wait_renewals(&agent, &window, 5).await;
    let writes = audit.since(&window, Purpose::NodeStatus);
    assert!(
        writes.is_empty(),
        "the unchanged status was written {} times: {writes:?}\n{}",
        writes.len(),
        agent.log_tail(30)
    );
}

/// One agent's requests in the API server's audit log.
struct AgentAudit {
    log: std::path::PathBuf,
    user: String,
}

impl AgentAudit {
    /// The agent's requests for `purpose` received at or after `since`.
    fn since(
        &self,
        since: &str,
        purpose: tart_kubelet_tests::sandbox::report::requests::Purpose,
    ) -> Vec<tart_kubelet_tests::sandbox::report::requests::AuditRequest> {
        use tart_kubelet_tests::sandbox::report::requests::{Purpose, parse};
        parse(&std::fs::read_to_string(&self.log).unwrap_or_default())
            .into_iter()
            .filter(|r| {
                r.user == self.user && r.received.as_str() >= since && Purpose::of(r) == purpose
            })
            .collect()
    }

    /// Until `n` Lease renewals have followed `since`: a wait on the agent's own clock, read
    /// from the audit log.
    async fn wait_renewals(&self, agent: &Agent, since: &str, n: usize) {
        use tart_kubelet_tests::sandbox::report::requests::Purpose;
        wait_for(Duration::from_secs(60), || async {
            (self.since(since, Purpose::LeaseRenewal).len() >= n).then_some(())
        })
        .await
        .unwrap_or_else(|e| panic!("{n} Lease renewals never came: {e}\n{}", agent.log_tail(30)));
    }
}
