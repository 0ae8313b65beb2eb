//! End-to-end: live host readiness and quarantine on the real control plane (scheduler and node
//! lifecycle controller included), under both identities.
//!
//! * Taking the (simulated) GUI session away cordons the Node within one status period with
//!   `TartReady=False` / `NoGUISession`, keeps `Ready=True` (no NoExecute taint, so nothing is
//!   evicted), leaves the running VM alone (same process, Pod still Running), keeps a new Pod
//!   off the Node, and restoring the session lifts it all and the Pod lands.
//! * Three host-caused start failures quarantine a Node: the scheduler sends the next Pods to a
//!   second Node.
//! * An operator's cordon and uncordon give kubelet's `NodeNotSchedulable` and
//!   `NodeSchedulable` events, and the agent leaves the cordon in place.
//!
//! Run: `cargo test -p tart-kubelet-tests --test e2e node_readiness:: -- --nocapture`

use crate::pod_support;

use std::{collections::BTreeMap, time::Duration};

use k8s_openapi::api::core::v1::{Event, Node, Pod, Toleration};
use kube::{Api, ResourceExt, api::ListParams};
use pod_support::{Env, WAIT, phase};
use tart_kubelet_tests::{
    agent::{HostChecksFile, HostFacts},
    cluster::wait_for,
    fake::{Knobs, Rule},
};

const ANNOTATION: &str = "tart.run/cordoned-by-agent";
/// The status period the agents in these tests run with.
const STATUS_PERIOD: Duration = Duration::from_secs(10);

fn knobs() -> Knobs {
    Knobs::new().with_latency_scale(0.001)
}

fn condition<'a>(n: &'a Node, type_: &str) -> Option<(&'a str, Option<&'a str>)> {
    n.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| (c.status.as_str(), c.reason.as_deref()))
}

fn unschedulable(n: &Node) -> bool {
    n.spec.as_ref().and_then(|s| s.unschedulable) == Some(true)
}

fn ours(n: &Node) -> Option<&str> {
    n.annotations().get(ANNOTATION).map(String::as_str)
}

/// An operator's `kubectl cordon` (`on`) or `kubectl uncordon` of the Node.
async fn operator_cordon(env: &Env, on: bool) {
    let nodes: Api<Node> = Api::all(env.admin.clone());
    let patch = serde_json::json!({"spec": {"unschedulable": on}});
    nodes
        .patch(
            &env.node,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await
        .unwrap_or_else(|e| panic!("operator (un)cordon to {on}: {e}"));
}

fn taint_effects(n: &Node) -> Vec<(String, String)> {
    n.spec
        .as_ref()
        .and_then(|s| s.taints.clone())
        .unwrap_or_default()
        .into_iter()
        .map(|t| (t.key, t.effect))
        .collect()
}

/// A Pod the scheduler places: it tolerates the virtual-kubelet and pressure taints (not the
/// unschedulable one) and selects nodes by `selector`.
fn scheduled_pod(env: &Env, name: &str, selector: (&str, &str)) -> Pod {
    let mut p = env.pod(name);
    let spec = p.spec.as_mut().unwrap();
    spec.node_name = None;
    // The pressure taints depend on the machine the tests run on (a nearly full disk gives
    // every Node `disk-pressure`), so they are tolerated too; `unschedulable` is not.
    let tolerate = |key: &str| Toleration {
        key: Some(key.into()),
        operator: Some("Exists".into()),
        ..Default::default()
    };
    spec.tolerations = Some(vec![
        tolerate("virtual-kubelet.io/provider"),
        tolerate("node.kubernetes.io/disk-pressure"),
        tolerate("node.kubernetes.io/memory-pressure"),
        tolerate("node.kubernetes.io/pid-pressure"),
    ]);
    spec.node_selector = Some(BTreeMap::from([(
        selector.0.to_string(),
        selector.1.to_string(),
    )]));
    p
}

async fn wait_node(env: &Env, what: &str, pred: impl Fn(&Node) -> bool, within: Duration) -> Node {
    let nodes: Api<Node> = Api::all(env.admin.clone());
    let name = env.node.clone();
    let r = wait_for(within, || {
        let nodes = nodes.clone();
        let name = name.clone();
        let pred = &pred;
        async move {
            nodes
                .get_opt(&name)
                .await
                .ok()
                .flatten()
                .filter(|n| pred(n))
        }
    })
    .await;
    match r {
        Ok(n) => n,
        Err(e) => {
            let now = nodes.get_opt(&name).await.ok().flatten();
            panic!(
                "node {name}: {what}: {e}\nspec: {:?}\nconditions: {:?}\nagent log:\n{}",
                now.as_ref().and_then(|n| n.spec.clone()),
                now.and_then(|n| n.status).and_then(|s| s.conditions),
                env.agent_log()
            )
        }
    }
}

/// The reasons of the core/v1 Events about the Node.
async fn node_event_reasons(env: &Env) -> Vec<String> {
    let api: Api<Event> = Api::namespaced(env.admin.clone(), "default");
    let lp = ListParams::default().fields(&format!("involvedObject.name={}", env.node));
    api.list(&lp)
        .await
        .map(|l| l.items)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|e| e.reason)
        .collect()
}

async fn wait_node_events(env: &Env, reasons: &[&str]) {
    let r = wait_for(WAIT, || async {
        let got = node_event_reasons(env).await;
        reasons
            .iter()
            .all(|r| got.iter().any(|g| g == r))
            .then_some(())
    })
    .await;
    assert!(
        r.is_ok(),
        "node events {reasons:?} missing; have {:?}",
        node_event_reasons(env).await
    );
}

/// The Pod is waiting for a node because none passes the scheduler's filters.
fn kept_off(p: &Pod) -> bool {
    p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_none()
        && p.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .any(|c| {
                c.type_ == "PodScheduled"
                    && c.status == "False"
                    && c.message
                        .as_deref()
                        .is_some_and(|m| m.contains("unschedulable"))
            })
}

/// A healthy host-checks file and the agent flags that make the agent read it every second.
fn host_checks() -> (HostChecksFile, Vec<String>) {
    let checks = HostChecksFile::new().expect("host checks file");
    let mut args = checks.args().to_vec();
    args.extend(["--host-check-interval".into(), "1s".into()]);
    (checks, args)
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

async fn gui_session_loss_keeps_new_pods_off_without_evicting(
    mut env: Env,
    checks: HostChecksFile,
) {
    env.start_agent();

    env.create(&env.pod("running")).await;
    let running = env
        .wait_pod("running", "Running", |p| phase(p) == "Running")
        .await;
    let vm = Env::vm_of(&running);
    let pid = env.home.run_pid(&vm).expect("the VM's tart run process");
    wait_node(
        &env,
        "TartReady=True",
        |n| condition(n, "TartReady").map(|c| c.0) == Some("True"),
        WAIT,
    )
    .await;

    checks
        .set(HostFacts {
            gui_session: false,
            ..HostFacts::HEALTHY
        })
        .unwrap();
    let blocked = wait_node(
        &env,
        "cordoned by the agent with TartReady=False/NoGUISession",
        |n| {
            unschedulable(n)
                && ours(n) == Some("NoGUISession")
                && condition(n, "TartReady") == Some(("False", Some("NoGUISession")))
        },
        STATUS_PERIOD,
    )
    .await;
    assert_eq!(
        condition(&blocked, "Ready").map(|c| c.0),
        Some("True"),
        "Ready=False would bring the NoExecute not-ready taint"
    );

    // The node lifecycle controller turns the cordon into a NoSchedule taint, never NoExecute.
    let tainted = wait_node(
        &env,
        "unschedulable:NoSchedule taint",
        |n| {
            taint_effects(n).contains(&(
                "node.kubernetes.io/unschedulable".into(),
                "NoSchedule".into(),
            ))
        },
        WAIT,
    )
    .await;
    let selector = ("kubernetes.io/hostname", env.node.as_str());
    env.create(&scheduled_pod(&env, "later", selector)).await;
    env.wait_pod("later", "kept off the node", kept_off).await;

    let now = env.pods().get("running").await.unwrap();
    assert_eq!(phase(&now), "Running");
    assert!(now.metadata.deletion_timestamp.is_none(), "evicted");
    assert_eq!(
        env.home.run_pid(&vm),
        Some(pid),
        "the running VM was touched"
    );
    let nodes: Api<Node> = Api::all(env.admin.clone());
    let n = nodes.get(&env.node).await.unwrap();
    assert!(
        !taint_effects(&n)
            .iter()
            .chain(taint_effects(&tainted).iter())
            .any(|(_, e)| e == "NoExecute"),
        "{:?}",
        taint_effects(&n)
    );
    assert_eq!(
        env.metric("tart_kubelet_host_check_failing{check=\"gui_session\"}")
            .await,
        Some(1.0)
    );

    checks.set(HostFacts::HEALTHY).unwrap();
    wait_node(
        &env,
        "uncordoned with TartReady=True",
        |n| {
            !unschedulable(n)
                && ours(n).is_none()
                && condition(n, "TartReady").map(|c| c.0) == Some("True")
        },
        STATUS_PERIOD,
    )
    .await;
    let landed = env
        .wait_pod("later", "scheduled and Running", |p| phase(p) == "Running")
        .await;
    assert_eq!(
        landed.spec.unwrap().node_name.as_deref(),
        Some(env.node.as_str())
    );
    assert_eq!(env.home.run_pid(&vm), Some(pid));
    wait_node_events(
        &env,
        &[
            "HostNotReadyForVMs",
            "NodeNotSchedulable",
            "HostReadyForVMs",
            "NodeSchedulable",
        ],
    )
    .await;
    assert_eq!(
        env.metric("tart_kubelet_host_check_failing{check=\"gui_session\"}")
            .await,
        Some(0.0)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn losing_the_gui_session_keeps_new_pods_off_without_evicting_and_lifts_when_restored() {
    let (checks, args) = host_checks();
    let env = Env::new("gui", knobs(), &strs(&args)).await;
    gui_session_loss_keeps_new_pods_off_without_evicting(env, checks).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn as_its_own_node_losing_the_gui_session_keeps_new_pods_off_and_lifts_when_restored() {
    let (checks, args) = host_checks();
    let env = Env::new_as_node("guinode", knobs(), &strs(&args)).await;
    gui_session_loss_keeps_new_pods_off_without_evicting(env, checks).await;
}

/// An operator's cordon is the operator's: the agent neither claims nor lifts it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operators_cordon_survives_a_host_check_failing_and_passing() {
    let (checks, args) = host_checks();
    let mut env = Env::new_as_node("opcordon", knobs(), &strs(&args)).await;
    env.start_agent();
    wait_node(
        &env,
        "TartReady=True",
        |n| condition(n, "TartReady").map(|c| c.0) == Some("True"),
        WAIT,
    )
    .await;
    operator_cordon(&env, true).await;
    checks
        .set(HostFacts {
            keychain: false,
            ..HostFacts::HEALTHY
        })
        .unwrap();
    wait_node(
        &env,
        "TartReady=False/KeychainNotUsable",
        |n| condition(n, "TartReady") == Some(("False", Some("KeychainNotUsable"))),
        STATUS_PERIOD,
    )
    .await;
    checks.set(HostFacts::HEALTHY).unwrap();
    let n = wait_node(
        &env,
        "TartReady=True",
        |n| condition(n, "TartReady").map(|c| c.0) == Some("True"),
        STATUS_PERIOD,
    )
    .await;
    assert!(unschedulable(&n), "the operator's cordon was lifted");
    assert_eq!(ours(&n), None, "the agent claimed the operator's cordon");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_host_caused_start_failures_quarantine_the_node_and_the_scheduler_uses_another() {
    let pool = tart_kubelet_tests::cluster::unique("pool");
    let label = format!("tart.run/pool={pool}");
    let quarantine = [
        "--quarantine-faults",
        "3",
        "--quarantine-window",
        "10m",
        "--quarantine-cooldown",
        "15m",
        "--vm-slots",
        "4",
        "--max-pods",
        "10",
        "--node-label",
        &label,
    ];
    // The broken Mac runs as its own node (Node authorizer + NodeRestriction); the healthy one
    // under the shipped RBAC.
    let mut broken = Env::new_as_node(
        "quar-a",
        knobs().with_rule(Rule::aux_storage_locked()),
        &quarantine,
    )
    .await;
    let mut healthy = Env::new("quar-b", knobs(), &quarantine).await;
    broken.start_agent();
    healthy.start_agent();
    for env in [&broken, &healthy] {
        wait_node(
            env,
            "TartReady=True",
            |n| condition(n, "TartReady").map(|c| c.0) == Some("True"),
            WAIT,
        )
        .await;
    }

    for i in 0..3 {
        broken.create(&broken.pod(&format!("fails-{i}"))).await;
    }
    let q = wait_node(
        &broken,
        "quarantined",
        |n| {
            unschedulable(n)
                && ours(n) == Some("AuxiliaryStorageLocked")
                && condition(n, "TartReady") == Some(("False", Some("AuxiliaryStorageLocked")))
        },
        WAIT,
    )
    .await;
    assert_eq!(condition(&q, "Ready").map(|c| c.0), Some("True"));
    assert_eq!(
        broken.metric("tart_kubelet_node_quarantined").await,
        Some(1.0)
    );
    assert_eq!(
        broken.metric("tart_kubelet_node_quarantines_total").await,
        Some(1.0)
    );
    wait_node_events(&broken, &["NodeQuarantined", "NodeNotSchedulable"]).await;

    // Without the quarantine the scheduler would spread these over both (equally empty) nodes.
    for i in 0..3 {
        let name = format!("next-{i}");
        healthy
            .create(&scheduled_pod(&healthy, &name, ("tart.run/pool", &pool)))
            .await;
    }
    for i in 0..3 {
        let p = healthy
            .wait_pod(&format!("next-{i}"), "Running", |p| phase(p) == "Running")
            .await;
        assert_eq!(
            p.spec.unwrap().node_name.as_deref(),
            Some(healthy.node.as_str()),
            "scheduled onto the quarantined node"
        );
    }
    assert_eq!(
        healthy.metric("tart_kubelet_node_quarantined").await,
        Some(0.0)
    );
    // Still quarantined: nothing started on the broken node in the meantime.
    let nodes: Api<Node> = Api::all(broken.admin.clone());
    assert!(unschedulable(&nodes.get(&broken.node).await.unwrap()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operators_cordon_and_uncordon_are_kubelets_node_events() {
    let mut env = Env::new("cordon", knobs(), &[]).await;
    env.start_agent();
    wait_node(
        &env,
        "registered and Ready",
        |n| condition(n, "Ready").map(|c| c.0) == Some("True"),
        WAIT,
    )
    .await;
    operator_cordon(&env, true).await;
    wait_node_events(&env, &["NodeNotSchedulable"]).await;
    let nodes: Api<Node> = Api::all(env.admin.clone());
    let n = nodes.get(&env.node).await.unwrap();
    assert!(unschedulable(&n), "the agent keeps an operator's cordon");
    assert_eq!(ours(&n), None, "and does not claim it");
    operator_cordon(&env, false).await;
    wait_node_events(&env, &["NodeSchedulable"]).await;
    let reasons = node_event_reasons(&env).await;
    let count = |r: &str| reasons.iter().filter(|g| *g == r).count();
    assert_eq!(
        (count("NodeNotSchedulable"), count("NodeSchedulable")),
        (1, 1),
        "one event each: {reasons:?}"
    );
}
