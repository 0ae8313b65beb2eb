//! End-to-end: the agent as its own node (`system:node:<node>` in `system:nodes`, `--identity
//! node`) on the real control plane, where the Node authorizer and NodeRestriction — not the
//! shipped RBAC — decide what it may do: a node reads only the Secrets of Pods bound to it, the
//! Pod lifecycle works without the finalizer (and the env from its own Secret reaches the
//! guest), and a force-deleted Pod leaves no VM behind.
//!
//! Run: `cargo test -p tart-kubelet-tests --test e2e pod_identity:: -- --nocapture`

use crate::pod_support;

use std::{
    collections::BTreeMap,
    sync::atomic::{AtomicBool, Ordering},
    time::Duration,
};

use k8s_openapi::{
    ByteString,
    api::{
        coordination::v1::Lease,
        core::v1::{EnvVar, EnvVarSource, Node, Pod, Secret, SecretKeySelector},
    },
};
use kube::{
    Api, ResourceExt,
    api::{DeleteParams, ObjectMeta, PostParams},
};
use pod_support::{Env, WAIT, phase, ready};
use tart_kubelet_tests::{
    cluster::{client_for, unique, wait_for},
    fake::{Knobs, VmKnob},
};

const FINALIZER: &str = "tart.run/vm";

fn knobs() -> Knobs {
    Knobs::new().with_latency_scale(0.001)
}

/// An Opaque Secret `name` with one key, `TOKEN`.
async fn create_secret(env: &Env, name: &str, value: &str) {
    let api: Api<Secret> = Api::namespaced(env.admin.clone(), &env.ns);
    let s = Secret {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(
            "TOKEN".to_string(),
            ByteString(value.as_bytes().to_vec()),
        )])),
        ..Default::default()
    };
    api.create(&PostParams::default(), &s)
        .await
        .expect("create secret");
}

/// `pod` with its container's `TOKEN` taken from Secret `secret`: that reference is what lets
/// the Node authorizer give the Secret to the Pod's node.
fn with_secret_env(mut pod: Pod, secret: &str) -> Pod {
    let c = &mut pod.spec.as_mut().unwrap().containers[0];
    c.env = Some(vec![EnvVar {
        name: "TOKEN".into(),
        value_from: Some(EnvVarSource {
            secret_key_ref: Some(SecretKeySelector {
                name: secret.into(),
                key: "TOKEN".into(),
                optional: None,
            }),
            ..Default::default()
        }),
        ..Default::default()
    }]);
    pod
}

fn has_finalizer(p: &Pod) -> bool {
    p.finalizers().iter().any(|f| f == FINALIZER)
}

/// The HTTP status of a failed API call (0 when it is not an API error).
fn status_code(e: &kube::Error) -> u16 {
    match e {
        kube::Error::Api(s) => s.code,
        _ => 0,
    }
}

/// Every line of the agent's log (not only the tail `agent_log` shows).
fn full_log(env: &Env) -> String {
    std::fs::read_to_string(&env.log_path).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_credentials_read_only_the_secrets_of_pods_bound_to_their_node() {
    let env = Env::new_as_node("idsecrets", knobs(), &[]).await;
    let other = unique("mac-idother");
    let other_kc = env
        .cp
        .mint_kubeconfig(&format!("system:node:{other}"), &["system:nodes"]);
    create_secret(&env, "mine", "a").await;
    create_secret(&env, "theirs", "b").await;
    let mut mine = with_secret_env(env.pod("mine"), "mine");
    mine.spec.as_mut().unwrap().node_name = Some(env.node.clone());
    let mut theirs = with_secret_env(env.pod("theirs"), "theirs");
    theirs.spec.as_mut().unwrap().node_name = Some(other.clone());
    env.create(&mine).await;
    env.create(&theirs).await;

    let ours: Api<Secret> = Api::namespaced(client_for(&env.kubeconfig).await, &env.ns);
    let theirs_api: Api<Secret> = Api::namespaced(client_for(&other_kc).await, &env.ns);
    // The authorizer's graph follows Pod bindings through an informer: poll until it has both.
    let got = wait_for(Duration::from_secs(30), || async {
        let a = ours.get("mine").await.ok()?;
        let b = theirs_api.get("theirs").await.ok()?;
        Some((a, b))
    })
    .await;
    let (a, b) = got.expect("each node reads the Secret of its own Pod");
    assert_eq!(a.data.unwrap()["TOKEN"].0, b"a");
    assert_eq!(b.data.unwrap()["TOKEN"].0, b"b");

    let refused = ours.get("theirs").await.expect_err("another node's Secret");
    assert_eq!(status_code(&refused), 403, "{refused}");
    let refused = theirs_api
        .get("mine")
        .await
        .expect_err("another node's Secret");
    assert_eq!(status_code(&refused), 403, "{refused}");
    let listed = ours
        .list(&Default::default())
        .await
        .expect_err("list secrets");
    assert_eq!(
        status_code(&listed),
        403,
        "a node never lists Secrets: {listed}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn as_its_node_the_agent_runs_a_pod_without_the_finalizer_and_deletes_it_gracefully() {
    // fake-tart runs the real guest launcher, so the env the agent resolved reaches a guest.
    let guest = knobs().with_vm("*", VmKnob::default().running_guest_launcher());
    let mut env = Env::new_as_node("idlife", guest, &[]).await;
    create_secret(&env, "token", "s3cret").await;
    env.start_agent();
    let mut pod = with_secret_env(env.pod("vm-1"), "token");
    pod.spec.as_mut().unwrap().containers[0].command = Some(vec![
        "/bin/sh".into(),
        "-c".into(),
        "printf 'TOKEN=%s\\n' \"$TOKEN\"; exec sleep 600".into(),
    ]);
    let pod = env.create(&pod).await;
    let vm = Env::vm_of(&pod);
    let finalized = AtomicBool::new(false);
    env.wait_pod("vm-1", "Running and ready", |p| {
        if has_finalizer(p) {
            finalized.store(true, Ordering::Relaxed);
        }
        phase(p) == "Running" && ready(p)
    })
    .await;
    assert!(
        !finalized.load(Ordering::Relaxed),
        "a node identity may not patch Pod metadata"
    );
    assert!(env.home.is_running(&vm), "no tart run process holds the VM");
    // The node read its own Pod's Secret (the Node authorizer's graph) into the guest's env.
    let stdout = env.guest_dir.join(&vm).join("status").join("stdout");
    let seen = wait_for(WAIT, || async {
        let out = std::fs::read_to_string(&stdout).ok()?;
        out.contains("TOKEN=").then_some(out)
    })
    .await;
    assert_eq!(
        seen.as_deref().map(str::trim),
        Ok("TOKEN=s3cret"),
        "{}",
        env.agent_log()
    );
    // Pod events reach the API server (a node may create core/v1 Events only).
    env.wait_event("vm-1", "Started").await;

    // The node side works under NodeRestriction: its Node is Ready, its Lease is held.
    let nodes: Api<Node> = Api::all(env.admin.clone());
    let node = nodes.get(&env.node).await.expect("our Node");
    let ready_cond = node
        .status
        .and_then(|s| s.conditions)
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.type_ == "Ready");
    assert_eq!(ready_cond.map(|c| c.status).as_deref(), Some("True"));
    let leases: Api<Lease> = Api::namespaced(env.admin.clone(), "kube-node-lease");
    let lease = leases.get(&env.node).await.expect("our Lease");
    let holder = lease
        .spec
        .and_then(|s| s.holder_identity)
        .unwrap_or_default();
    assert!(
        holder.starts_with(&format!("{}_", env.node)),
        "Lease held by {holder:?}"
    );

    env.delete("vm-1", 10).await;
    env.wait_gone("vm-1").await;
    assert!(
        !env.vms().contains(&vm),
        "the VM is deleted before the Pod: {:?}",
        env.vms()
    );
    let log = full_log(&env);
    assert!(
        !log.contains("forbidden"),
        "a request was refused:\n{}",
        log.lines()
            .filter(|l| l.contains("forbidden"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_force_deleted_pod_leaves_no_vm_and_no_held_slot_after_the_sweep() {
    let mut env = Env::new_as_node("idforce", knobs(), &["--vm-slots", "1"]).await;
    env.start_agent();
    let pod = env.create(&env.pod("vm-1")).await;
    let vm = Env::vm_of(&pod);
    env.wait_pod("vm-1", "Running", |p| phase(p) == "Running" && ready(p))
        .await;
    assert!(env.home.is_running(&vm));

    // `kubectl delete --force --grace-period=0`: without a finalizer the Pod is gone at once,
    // and the controller never reconciles it again.
    let force = DeleteParams::default().grace_period(0);
    env.pods().delete("vm-1", &force).await.expect("delete");
    let gone = env.pods().get_opt("vm-1").await.expect("get");
    assert!(gone.is_none(), "no finalizer holds the Pod");

    // The orphan sweep (every 60 s) tears the worker down and stops and deletes the VM.
    let swept = wait_for(WAIT, || async {
        (!env.home.vm_exists(&vm) && !env.home.is_running(&vm)).then_some(())
    })
    .await;
    assert!(
        swept.is_ok(),
        "VM {vm} still there (running: {}); the sweep said:\n{}",
        env.home.is_running(&vm),
        full_log(&env)
            .lines()
            .filter(|l| l.contains("vm_gc") || l.contains("orphan") || l.contains("vanished"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    // The worker's slot went with it: the one slot takes the next Pod.
    env.create(&env.pod("vm-2")).await;
    env.wait_pod("vm-2", "Running in the freed slot", |p| {
        phase(p) == "Running" && ready(p)
    })
    .await;
}
