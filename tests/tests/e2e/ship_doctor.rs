//! `tart-kubelet doctor` against the real control plane (etcd + kube-apiserver v1.20.2):
//! a role missing one verb is reported by name; the shipped RBAC manifest satisfies every
//! SelfSubjectAccessReview doctor makes; an unreachable API server is a failure with a fix.
//! tart is `fake-tart` in a per-test TART_HOME.
use std::path::Path;
use std::process::Output;
use std::time::Duration;

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, RoleRef, Subject};
use kube::api::{Api, ObjectMeta, PostParams};
use tart_kubelet::ship::rbac::{AGENT, ALWAYS, NODE, Permission};
use tart_kubelet_tests::cluster::{ControlPlane, unique, wait_for};
use tart_kubelet_tests::fake::FakeHome;

use crate::node_support::apply_rbac;

/// Runs doctor with fake-tart and `kubeconfig`, bounded by a deadline.
async fn doctor(home: &FakeHome, kubeconfig: &Path, extra: &[&str]) -> Output {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_agent-under-test"));
    cmd.arg("doctor")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--tart-program")
        .arg(env!("CARGO_BIN_EXE_fake-tart"))
        .arg("--tart-home")
        .arg(home.path())
        .args(["--node-name", "doctor-test", "--call-timeout", "10"])
        .args(extra)
        .env("CI", "1")
        .kill_on_drop(true);
    tokio::time::timeout(Duration::from_secs(120), cmd.output())
        .await
        .expect("doctor finished within 120 s")
        .expect("doctor ran")
}

/// The exit status and both streams of a finished `tart-kubelet` subcommand, for assertions.
pub(crate) fn text(o: &Output) -> String {
    format!(
        "exit {:?}\n{}{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The line of check `name` in the text report.
fn line<'a>(out: &'a str, name: &str) -> &'a str {
    out.lines()
        .find(|l| l.len() > 7 && l[7..].starts_with(&format!("{name} ")))
        .unwrap_or_else(|| panic!("no `{name}` line in:\n{out}"))
}

fn rule(p: &Permission) -> PolicyRule {
    let resource = if p.subresource.is_empty() {
        p.resource.to_string()
    } else {
        format!("{}/{}", p.resource, p.subresource)
    };
    PolicyRule {
        api_groups: Some(vec![p.group.to_string()]),
        resources: Some(vec![resource]),
        verbs: vec![p.verb.to_string()],
        ..Default::default()
    }
}

/// A ClusterRole with `perms`, bound to `user`.
async fn grant(client: &kube::Client, user: &str, perms: &[Permission]) {
    let name = unique("doctor-role");
    let roles: Api<ClusterRole> = Api::all(client.clone());
    roles
        .create(
            &PostParams::default(),
            &ClusterRole {
                metadata: ObjectMeta {
                    name: Some(name.clone()),
                    ..Default::default()
                },
                rules: Some(perms.iter().map(rule).collect()),
                ..Default::default()
            },
        )
        .await
        .expect("create ClusterRole");
    let bindings: Api<ClusterRoleBinding> = Api::all(client.clone());
    bindings
        .create(
            &PostParams::default(),
            &ClusterRoleBinding {
                metadata: ObjectMeta {
                    name: Some(name.clone()),
                    ..Default::default()
                },
                role_ref: RoleRef {
                    api_group: Some("rbac.authorization.k8s.io".into()),
                    kind: "ClusterRole".into(),
                    name,
                },
                subjects: Some(vec![Subject {
                    api_group: Some("rbac.authorization.k8s.io".into()),
                    kind: "User".into(),
                    name: user.into(),
                    ..Default::default()
                }]),
            },
        )
        .await
        .expect("create ClusterRoleBinding");
}

/// Polls a SubjectAccessReview (as admin) until `user` may `get nodes`: the binding is live.
async fn wait_until_authorized(client: &kube::Client, user: &str, groups: &[&str]) {
    let get_nodes = ResourceAttributes {
        resource: Some("nodes".into()),
        verb: Some("get".into()),
        ..Default::default()
    };
    wait_until_allowed(client, user, groups, get_nodes).await;
}

/// Waits until `user` in `groups` may do `what` (an RBAC binding takes a moment to apply).
async fn wait_until_allowed(
    client: &kube::Client,
    user: &str,
    groups: &[&str],
    what: ResourceAttributes,
) {
    let api: Api<SubjectAccessReview> = Api::all(client.clone());
    wait_for(Duration::from_secs(30), || {
        let api = api.clone();
        let what = what.clone();
        async move {
            let sar = SubjectAccessReview {
                spec: SubjectAccessReviewSpec {
                    user: Some(user.into()),
                    groups: Some(groups.iter().map(|g| g.to_string()).collect()),
                    resource_attributes: Some(what),
                    ..Default::default()
                },
                ..Default::default()
            };
            let r = api.create(&PostParams::default(), &sar).await.ok()?;
            r.status.filter(|s| s.allowed).map(|_| ())
        }
    })
    .await
    .expect("RBAC binding became effective");
}

#[tokio::test(flavor = "multi_thread")]
async fn doctor_names_the_one_missing_rbac_verb() {
    let cp = ControlPlane::shared();
    let admin = cp.admin_client().await;
    let user = unique("mac-missing-verb");
    let missing = |p: &&Permission| p.resource == "pods" && p.subresource == "status";
    let perms: Vec<Permission> = ALWAYS
        .iter()
        .chain(AGENT)
        .filter(|p| !missing(p))
        .copied()
        .collect();
    assert_eq!(perms.len() + 1, ALWAYS.len() + AGENT.len());
    grant(&admin, &user, &perms).await;
    wait_until_authorized(&admin, &user, &[]).await;
    let kubeconfig = cp.mint_kubeconfig(&user, &[]);
    let home = FakeHome::new().unwrap();

    let out = doctor(&home, &kubeconfig, &[]).await;
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    let rbac = line(&t, "rbac");
    assert!(rbac.starts_with("[FAIL]"), "{t}");
    assert!(
        rbac.contains("missing 1 permission(s): patch pods/status"),
        "{t}"
    );
    // Everything else doctor can check on Linux passes.
    assert!(line(&t, "kubeconfig").starts_with("[ ok ]"), "{t}");
    assert!(line(&t, "tart").starts_with("[ ok ]"), "{t}");
    assert!(line(&t, "tart-home").starts_with("[ ok ]"), "{t}");
    assert!(line(&t, "gui-session").starts_with("[skip]"), "{t}");
}

#[tokio::test(flavor = "multi_thread")]
async fn doctor_with_no_grants_lists_every_missing_permission_and_json_says_fail() {
    let cp = ControlPlane::shared();
    let user = unique("mac-no-rbac");
    let kubeconfig = cp.mint_kubeconfig(&user, &[]);
    let home = FakeHome::new().unwrap();
    let out = doctor(&home, &kubeconfig, &["--json"]).await;
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    let rbac: serde_json::Value = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("JSON lines"))
        .find(|v| v["check"] == "rbac")
        .expect("rbac line");
    assert_eq!(rbac["status"], "fail");
    let msg = rbac["message"].as_str().unwrap();
    for p in ALWAYS.iter().chain(AGENT) {
        assert!(
            msg.contains(&p.display()),
            "{} not named in {msg}",
            p.display()
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn shipped_rbac_manifest_satisfies_every_check_doctor_makes() {
    let cp = ControlPlane::shared();
    apply_rbac(cp).await;

    let user = unique("mac-shipped-rbac");
    let admin = cp.admin_client().await;
    wait_until_authorized(&admin, &user, &["tart-kubelets"]).await;
    let kubeconfig = cp.mint_kubeconfig(&user, &["tart-kubelets"]);
    let home = FakeHome::new().unwrap();
    let out = doctor(&home, &kubeconfig, &[]).await;
    let t = text(&out);
    let rbac = line(&t, "rbac");
    assert!(rbac.starts_with("[ ok ]"), "{t}");
    assert!(
        rbac.contains(&format!(
            "has all {} permissions",
            ALWAYS.len() + AGENT.len()
        )),
        "{t}"
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "nothing blocks with the shipped RBAC:\n{t}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn unreachable_api_server_fails_the_kubeconfig_check_with_a_fix() {
    let dir = tempfile::tempdir().unwrap();
    // A port nothing listens on: the connection is refused at once.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let kc = dir.path().join("kubeconfig");
    std::fs::write(
        &kc,
        format!(
            "apiVersion: v1\nkind: Config\nclusters: [{{name: c, cluster: {{server: \"https://127.0.0.1:{port}\", insecure-skip-tls-verify: true}}}}]\n\
             users: [{{name: u, user: {{token: not-a-secret}}}}]\n\
             contexts: [{{name: x, context: {{cluster: c, user: u}}}}]\ncurrent-context: x\n"
        ),
    )
    .unwrap();
    let home = FakeHome::new().unwrap();
    let out = doctor(&home, &kc, &[]).await;
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(line(&t, "kubeconfig").starts_with("[FAIL]"), "{t}");
    assert!(t.contains("fix: check the server URL"), "{t}");
    assert!(line(&t, "rbac").starts_with("[skip]"), "{t}");
    assert!(
        !t.contains("not-a-secret"),
        "the token leaked into the report:\n{t}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn as_its_node_doctor_needs_only_the_pre_pull_rbac_and_knows_another_node_s_credentials() {
    let cp = ControlPlane::shared();
    let home = FakeHome::new().unwrap();
    // The Node authorizer answers for system:nodes, except the two pre-pull grants (the
    // declaration's ConfigMap, listing Node Leases), which the shipped manifest binds to
    // system:nodes.
    apply_rbac(cp).await;
    let list_leases = ResourceAttributes {
        group: Some("coordination.k8s.io".into()),
        resource: Some("leases".into()),
        verb: Some("list".into()),
        namespace: Some("kube-node-lease".into()),
        ..Default::default()
    };
    let admin = cp.admin_client().await;
    wait_until_allowed(
        &admin,
        "system:node:doctor-test",
        &["system:nodes"],
        list_leases,
    )
    .await;
    let own = cp.mint_kubeconfig("system:node:doctor-test", &["system:nodes"]);
    // A small disk threshold: the shared test machine's free space is not under test here.
    let args = ["--identity", "node", "--disk-pressure-free", "1Mi"];
    let out = doctor(&home, &own, &args).await;
    let t = text(&out);
    let rbac = line(&t, "rbac");
    assert!(rbac.starts_with("[ ok ]"), "{t}");
    assert!(
        rbac.contains(&format!(
            "has all {} permissions",
            ALWAYS.len() + NODE.len()
        )),
        "{t}"
    );
    assert!(line(&t, "node-identity").starts_with("[ ok ]"), "{t}");
    assert_eq!(out.status.code(), Some(0), "{t}");

    let other = unique("mac-not-doctor-test");
    let theirs = cp.mint_kubeconfig(&format!("system:node:{other}"), &["system:nodes"]);
    let out = doctor(&home, &theirs, &args).await;
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    let id = line(&t, "node-identity");
    assert!(id.starts_with("[FAIL]"), "{t}");
    assert!(id.contains("not system:node:doctor-test"), "{t}");
    assert!(
        line(&t, "rbac").contains("get leases.coordination.k8s.io"),
        "another node's Lease is refused: {t}"
    );
}
