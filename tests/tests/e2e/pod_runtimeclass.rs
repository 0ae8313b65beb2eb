//! End to end: each Pod chooses its VM profile through its RuntimeClass (docs/pods.md, "VM
//! profiles"). Two RuntimeClasses with different handlers run their Pods with exactly their
//! profile's `tart run` flags (fake-tart's run record), a Pod without one gets the default, a
//! Pod naming a handler this Mac does not serve waits in `ContainerCreating` with a
//! `FailedCreatePodSandBox` event and no VM, a Pod whose RuntimeClass is missing waits and
//! starts once it is created, and the Node advertises the handlers it serves. Under both
//! identities (the shipped RBAC, and `system:node` under the Node authorizer). With two Macs
//! and the real scheduler, the RuntimeClass's `scheduling.nodeSelector` (merged into its Pods
//! by the API server's RuntimeClass admission) sends its Pods only to the Mac serving it.
//!
//! Run: `cargo test -p tart-kubelet-tests --test e2e pod_runtimeclass:: -- --nocapture`

use crate::pod_support;

use std::collections::BTreeMap;

use k8s_openapi::api::{
    core::v1::{Node, Pod, Toleration},
    node::v1::{RuntimeClass, Scheduling},
};
use kube::{
    Api,
    api::{DeleteParams, ObjectMeta, PostParams},
};
use pod_support::{Env, WAIT, phase, vm_pod, waiting_message, waiting_reason};
use tart_kubelet_tests::{
    cluster::{unique, wait_for},
    fake::{Knobs, SoftnetSetup},
};

const PROFILES: &str = r#"
[vm_profiles.isolated]
network = "softnet"
softnet_allow = ["10.20.0.0/16"]
softnet_block = ["10.20.5.0/24"]

[vm_profiles.lan-cached]
network = "bridged:en0"
root_disk_caching = "cached"
root_disk_sync = "none"
"#;

/// The RuntimeClasses of one test: unique names (they are cluster-scoped), removed on drop.
struct Classes {
    api: Api<RuntimeClass>,
    names: Vec<String>,
}

impl Classes {
    fn new(env: &Env) -> Self {
        Self {
            api: Api::all(env.admin.clone()),
            names: vec![],
        }
    }

    /// A unique name for a class (not created).
    fn name(&mut self, prefix: &str) -> String {
        let n = unique(prefix);
        self.names.push(n.clone());
        n
    }

    async fn delete(&self, name: &str) {
        self.api
            .delete(name, &DeleteParams::default())
            .await
            .expect("delete runtimeclass");
        let gone = wait_for(WAIT, || async {
            matches!(self.api.get_opt(name).await, Ok(None)).then_some(())
        })
        .await;
        assert!(gone.is_ok(), "runtimeclass {name} not deleted");
    }

    async fn create(&self, name: &str, handler: &str) {
        self.create_with(name, handler, None).await;
    }

    async fn create_with(&self, name: &str, handler: &str, scheduling: Option<Scheduling>) {
        let rc = RuntimeClass {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..Default::default()
            },
            handler: handler.into(),
            scheduling,
            ..Default::default()
        };
        self.api
            .create(&PostParams::default(), &rc)
            .await
            .expect("create runtimeclass");
    }
}

impl Drop for Classes {
    fn drop(&mut self) {
        let api = self.api.clone();
        let names = std::mem::take(&mut self.names);
        tokio::spawn(async move {
            for n in names {
                let _ = api.delete(&n, &DeleteParams::default()).await;
            }
        });
    }
}

/// An env whose agent has [`PROFILES`] in its configuration file.
async fn env(label: &str, as_node: bool) -> (Env, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config.toml");
    std::fs::write(&file, PROFILES).unwrap();
    // Four VMs at once: the three Pods that run, and the late one.
    let args = ["--config", file.to_str().unwrap(), "--vm-slots", "4"];
    let env = if as_node {
        Env::new_as_node(label, Knobs::new(), &args).await
    } else {
        Env::new(label, Knobs::new(), &args).await
    };
    (env, dir)
}

/// The `tart run` arguments fake-tart recorded for the Pod's VM, after the VM name.
fn run_flags(env: &Env, pod: &Pod) -> Vec<String> {
    let record = env
        .home
        .run_record(&Env::vm_of(pod))
        .unwrap_or_else(|| panic!("no run record for {:?}", pod.metadata.name));
    let args: Vec<String> = serde_json::from_value(record["args"].clone()).unwrap();
    // The flags a profile decides: the network's and the root disk's.
    args.into_iter()
        .filter(|a| a.starts_with("--net-") || a.starts_with("--root-disk-opts"))
        .collect()
}

async fn create_with_class(env: &Env, name: &str, class: Option<&str>) {
    let mut pod = vm_pod(name, &env.ns, &env.node);
    pod.spec.as_mut().unwrap().runtime_class_name = class.map(str::to_owned);
    env.create(&pod).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_pod_runs_with_its_runtime_class_profile_and_the_others_wait() {
    let (mut env, _dir) = env("rtclass", false).await;
    let mut classes = Classes::new(&env);
    let isolated = classes.name("tart-isolated");
    let lan = classes.name("tart-lan");
    let kata = classes.name("kata");
    let later = classes.name("tart-later");
    classes.create(&isolated, "isolated").await;
    classes.create(&lan, "lan-cached").await;
    classes.create(&kata, "kata").await;
    classes.create(&later, "isolated").await;

    create_with_class(&env, "iso", Some(&isolated)).await;
    create_with_class(&env, "lan", Some(&lan)).await;
    create_with_class(&env, "plain", None).await;
    create_with_class(&env, "unserved", Some(&kata)).await;
    // The API server's RuntimeClass admission refuses a Pod naming a missing class: the class
    // goes away after the Pod was created, before the agent starts it.
    create_with_class(&env, "early", Some(&later)).await;
    classes.delete(&later).await;
    env.start_agent();

    let running = |p: &Pod| phase(p) == "Running";
    let iso = env.wait_pod("iso", "running", running).await;
    assert_eq!(
        run_flags(&env, &iso),
        [
            "--net-softnet",
            "--net-softnet-allow=10.20.0.0/16",
            "--net-softnet-block=10.20.5.0/24"
        ]
    );
    let lan_pod = env.wait_pod("lan", "running", running).await;
    assert_eq!(
        run_flags(&env, &lan_pod),
        [
            "--net-bridged=en0",
            "--root-disk-opts=sync=none,caching=cached"
        ]
    );
    let plain = env.wait_pod("plain", "running", running).await;
    assert!(
        run_flags(&env, &plain).is_empty(),
        "the default profile is shared NAT with Tart's disk defaults"
    );

    // A handler this Mac does not serve: waiting, an event, no VM.
    let unserved = env
        .wait_pod("unserved", "waiting for its profile", |p| {
            waiting_message(p).contains("no VM profile for handler \"kata\"")
        })
        .await;
    assert_eq!(
        waiting_reason(&unserved).as_deref(),
        Some("ContainerCreating")
    );
    assert_eq!(phase(&unserved), "Pending");
    let events = env.wait_event("unserved", "FailedCreatePodSandBox").await;
    assert!(
        events.iter().any(|(_, r, m)| r == "FailedCreatePodSandBox"
            && m.starts_with("Failed to create pod sandbox: no VM profile for handler \"kata\"")),
        "{events:?}"
    );
    assert!(
        !env.home.vm_exists(&Env::vm_of(&unserved)),
        "no VM for a Pod whose profile is unknown"
    );

    // A missing RuntimeClass: waiting with kubelet's words, then running once it exists.
    let early = env
        .wait_pod("early", "waiting for its class", |p| {
            waiting_message(p) == format!("runtimeclass.node.k8s.io \"{later}\" not found")
        })
        .await;
    assert!(!env.home.vm_exists(&Env::vm_of(&early)));
    env.wait_event("early", "FailedCreatePodSandBox").await;
    classes.create(&later, "isolated").await;
    let early = env
        .wait_pod("early", "running once its class exists", running)
        .await;
    assert_eq!(run_flags(&env, &early)[0], "--net-softnet");

    // The Node advertises the handlers it serves.
    let nodes: Api<Node> = Api::all(env.admin.clone());
    let labels = wait_for(WAIT, || async {
        let n = nodes.get_opt(&env.node).await.ok().flatten()?;
        let l = n.metadata.labels.unwrap_or_default();
        l.contains_key("runtime-handler.tart.run/isolated")
            .then_some(l)
    })
    .await
    .unwrap_or_else(|_| panic!("no handler labels\n{}", env.agent_log()));
    assert_eq!(labels["runtime-handler.tart.run/isolated"], "true");
    assert_eq!(labels["runtime-handler.tart.run/lan-cached"], "true");
    assert!(!labels.contains_key("runtime-handler.tart.run/kata"));
    env.kill_agent().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_node_identity_reads_runtime_classes_and_advertises_its_handlers() {
    let (mut env, _dir) = env("rtclassnode", true).await;
    let mut classes = Classes::new(&env);
    let isolated = classes.name("tart-isolated");
    classes.create(&isolated, "isolated").await;
    env.start_agent();
    create_with_class(&env, "iso", Some(&isolated)).await;
    let iso = env
        .wait_pod("iso", "running", |p| phase(p) == "Running")
        .await;
    assert_eq!(run_flags(&env, &iso)[0], "--net-softnet");
    let nodes: Api<Node> = Api::all(env.admin.clone());
    let labelled = wait_for(WAIT, || async {
        let n = nodes.get_opt(&env.node).await.ok().flatten()?;
        let l = n.metadata.labels.unwrap_or_default();
        (l.get("runtime-handler.tart.run/lan-cached")
            .map(String::as_str)
            == Some("true"))
        .then_some(())
    })
    .await;
    assert!(labelled.is_ok(), "{}", env.agent_log());
    assert!(
        !env.agent_log()
            .contains("runtimeclasses.node.k8s.io is forbidden"),
        "{}",
        env.agent_log()
    );
    env.kill_agent().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_softnet_profile_without_a_setuid_softnet_is_unavailable_and_its_pods_wait() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config.toml");
    std::fs::write(&file, PROFILES).unwrap();
    // A softnet program the agent's user owns, not setuid: what an unfinished install leaves.
    let softnet = dir.path().join("softnet");
    std::fs::write(&softnet, "").unwrap();
    let args = [
        "--config",
        file.to_str().unwrap(),
        "--softnet-program",
        softnet.to_str().unwrap(),
        "--host-check-interval",
        "1s",
    ];
    let knobs = Knobs::new().with_softnet(SoftnetSetup::NotSetuid);
    let mut env = Env::new("rtclassoff", knobs, &args).await;
    let mut classes = Classes::new(&env);
    let isolated = classes.name("tart-isolated");
    classes.create(&isolated, "isolated").await;
    env.start_agent();

    // The Node keeps the handler's label off (the RuntimeClass's nodeSelector keeps new Pods
    // away) and says why in its annotation.
    let nodes: Api<Node> = Api::all(env.admin.clone());
    let node = wait_for(WAIT, || async {
        let n = nodes.get_opt(&env.node).await.ok().flatten()?;
        let l = n.metadata.labels.clone().unwrap_or_default();
        l.contains_key("runtime-handler.tart.run/lan-cached")
            .then_some(n)
    })
    .await
    .unwrap_or_else(|_| panic!("no handler labels\n{}", env.agent_log()));
    let labels = node.metadata.labels.unwrap_or_default();
    assert!(
        !labels.contains_key("runtime-handler.tart.run/isolated"),
        "{labels:?}"
    );
    let note = node
        .metadata
        .annotations
        .unwrap_or_default()
        .remove("tart.run/unavailable-vm-profiles")
        .expect("the unavailable profile is named on the Node");
    let note: std::collections::BTreeMap<String, String> = serde_json::from_str(&note).unwrap();
    assert!(
        note["isolated"].contains("is not root-owned and setuid"),
        "{note:?}"
    );
    assert_eq!(note.len(), 1, "{note:?}");

    // A Pod bound to the node anyway (nodeName set, no scheduler) waits: no `tart run`.
    create_with_class(&env, "iso", Some(&isolated)).await;
    let why = "VM profile \"isolated\" is unavailable on this node: ";
    let iso = env
        .wait_pod("iso", "waiting for its profile", |p| {
            waiting_message(p).starts_with(why)
        })
        .await;
    assert_eq!(waiting_reason(&iso).as_deref(), Some("ContainerCreating"));
    assert_eq!(phase(&iso), "Pending");
    let events = env.wait_event("iso", "FailedCreatePodSandBox").await;
    assert!(
        events.iter().any(|(_, r, m)| r == "FailedCreatePodSandBox"
            && m.starts_with(&format!("Failed to create pod sandbox: {why}"))),
        "{events:?}"
    );
    assert!(!env.home.vm_exists(&Env::vm_of(&iso)));
    assert!(
        env.home.run_record(&Env::vm_of(&iso)).is_none(),
        "no `tart run` for a profile this Mac cannot run"
    );
    env.kill_agent().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runtime_class_node_selector_sends_its_pods_only_to_macs_serving_it() {
    let pool = unique("rtpool");
    let label = format!("tart.run/pool={pool}");
    let (mut serving, dir) = env("rtserve", false).await;
    serving.set_extra_args(&[
        "--config",
        dir.path().join("config.toml").to_str().unwrap(),
        "--node-label",
        &label,
        "--vm-slots",
        "4",
    ]);
    let mut other = Env::new(
        "rtother",
        Knobs::new(),
        &["--node-label", &label, "--vm-slots", "4"],
    )
    .await;
    let mut classes = Classes::new(&serving);
    let isolated = classes.name("tart-isolated");
    let selector = BTreeMap::from([(
        "runtime-handler.tart.run/isolated".to_owned(),
        "true".to_owned(),
    )]);
    classes
        .create_with(
            &isolated,
            "isolated",
            Some(Scheduling {
                node_selector: Some(selector),
                tolerations: Some(vec![Toleration {
                    key: Some("virtual-kubelet.io/provider".into()),
                    operator: Some("Exists".into()),
                    ..Default::default()
                }]),
            }),
        )
        .await;
    serving.start_agent();
    other.start_agent();
    // Both Nodes registered and schedulable before any Pod is created.
    let nodes: Api<Node> = Api::all(serving.admin.clone());
    for node in [&serving.node, &other.node] {
        let ready = wait_for(WAIT, || async {
            let n = nodes.get_opt(node).await.ok().flatten()?;
            n.status
                .as_ref()?
                .conditions
                .as_ref()?
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True")
                .then_some(())
        })
        .await;
        assert!(ready.is_ok(), "{node} never Ready");
    }
    for i in 0..4 {
        let mut p = vm_pod(&format!("placed-{i}"), &serving.ns, "");
        let spec = p.spec.as_mut().unwrap();
        spec.node_name = None;
        // The RuntimeClass brings the provider toleration; the pressure taints depend on the
        // machine the tests run on.
        spec.tolerations = Some(
            ["disk-pressure", "memory-pressure", "pid-pressure"]
                .iter()
                .map(|t| Toleration {
                    key: Some(format!("node.kubernetes.io/{t}")),
                    operator: Some("Exists".into()),
                    ..Default::default()
                })
                .collect(),
        );
        spec.node_selector = Some(BTreeMap::from([("tart.run/pool".to_owned(), pool.clone())]));
        spec.runtime_class_name = Some(isolated.clone());
        serving.create(&p).await;
    }
    for i in 0..4 {
        let p = serving
            .wait_pod(&format!("placed-{i}"), "running", |p| phase(p) == "Running")
            .await;
        let spec = p.spec.as_ref().unwrap();
        assert_eq!(
            spec.node_name.as_deref(),
            Some(serving.node.as_str()),
            "placed on the Mac that does not serve the handler"
        );
        assert_eq!(
            spec.node_selector
                .as_ref()
                .and_then(|s| s.get("runtime-handler.tart.run/isolated"))
                .map(String::as_str),
            Some("true"),
            "the RuntimeClass admission merged its nodeSelector"
        );
        assert_eq!(run_flags(&serving, &p)[0], "--net-softnet");
    }
    serving.kill_agent().await;
    other.kill_agent().await;
}
