//! End-to-end support for the Pod-side tests: one agent process (the real binary, built as
//! `agent-under-test`) per test, with its own Node name, namespace, fake `TART_HOME`, admin port
//! and a kubeconfig minted for its own user in group `tart-kubelets`, which the shipped
//! `packaging/kubernetes/rbac.yaml` binds (least privilege), on the shared real control plane. Nothing here sleeps to wait: everything polls with a deadline.

pub(crate) mod tmux;

use std::{collections::BTreeMap, net::SocketAddr, path::PathBuf, process::Stdio, time::Duration};

use k8s_openapi::{
    ByteString,
    api::{
        core::v1::{
            Container, ContainerStateTerminated, ContainerStatus, Namespace, Pod, PodSpec, Secret,
            Toleration,
        },
        events::v1::Event,
    },
};
use kube::{
    Api, Client, ResourceExt,
    api::{DeleteParams, ObjectMeta, PostParams},
};
use tart_kubelet_tests::{
    cluster::{ControlPlane, unique, wait_for},
    fake::{FakeHome, Knobs},
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The group `packaging/kubernetes/rbac.yaml` binds its ClusterRole to.
pub(crate) const AGENT_GROUP: &str = "tart-kubelets";

/// How long a Pod may take to reach a state in these tests (the fake is near-instant; the
/// machine is shared and slow).
pub(crate) const WAIT: Duration = Duration::from_secs(90);

/// One agent under test.
pub(crate) struct Env {
    pub cp: &'static ControlPlane,
    pub admin: Client,
    pub home: FakeHome,
    pub node: String,
    pub ns: String,
    pub kubeconfig: PathBuf,
    pub admin_addr: SocketAddr,
    pub log_path: PathBuf,
    pub vm_log_dir: PathBuf,
    /// `--guest-dir`: one directory per VM with its control, status and volume shares.
    pub guest_dir: PathBuf,
    /// `--pod-log-dir`: the Pods' container logs.
    pub pod_log_dir: PathBuf,
    extra_args: Vec<String>,
    agent: Option<tokio::process::Child>,
    _logs: tempfile::TempDir,
}

fn free_port() -> SocketAddr {
    tart_kubelet_tests::agent::free_port().expect("a free port")
}

impl Env {
    /// A fresh node + namespace with `knobs` in its fake home; the agent is not started.
    pub(crate) async fn new(label: &str, knobs: Knobs, extra_args: &[&str]) -> Env {
        // Building/starting blocks: off the async runtime's worker threads.
        let cp = tokio::task::spawn_blocking(ControlPlane::shared)
            .await
            .expect("control plane");
        let admin = cp.admin_client().await;
        // The shipped RBAC: the agent runs under exactly the shipped least privilege.
        crate::node_support::apply_rbac(cp).await;
        let node = unique(&format!("mac-{label}"));
        let kubeconfig = cp.mint_kubeconfig(&format!("tart-kubelet-{node}"), &[AGENT_GROUP]);
        let ns = unique(label);
        let nss: Api<Namespace> = Api::all(admin.clone());
        let n = Namespace {
            metadata: ObjectMeta {
                name: Some(ns.clone()),
                ..Default::default()
            },
            ..Default::default()
        };
        nss.create(&PostParams::default(), &n)
            .await
            .expect("create namespace");
        let home = FakeHome::new().expect("fake home");
        home.set_knobs(&knobs).expect("knobs");
        let logs = tempfile::Builder::new()
            .prefix("pod-e2e-")
            .tempdir()
            .expect("tempdir");
        Env {
            cp,
            admin,
            node,
            ns,
            kubeconfig,
            admin_addr: free_port(),
            log_path: logs.path().join("agent.log"),
            vm_log_dir: logs.path().join("vm-logs"),
            guest_dir: logs.path().join("guest"),
            pod_log_dir: logs.path().join("pod-logs"),
            home,
            extra_args: extra_args.iter().map(|s| s.to_string()).collect(),
            agent: None,
            _logs: logs,
        }
    }

    /// Like [`Env::new`], but the agent runs as the node itself: credentials for
    /// `system:node:<node>` in `system:nodes` (the Node authorizer and NodeRestriction decide
    /// what it may do; no RBAC binding) and `--identity node`.
    pub(crate) async fn new_as_node(label: &str, knobs: Knobs, extra_args: &[&str]) -> Env {
        let mut env = Env::new(label, knobs, extra_args).await;
        env.kubeconfig = env
            .cp
            .mint_kubeconfig(&format!("system:node:{}", env.node), &["system:nodes"]);
        env.extra_args
            .extend(["--identity".to_string(), "node".to_string()]);
        env
    }

    /// A started agent that serves the kubelet API on its own port with the cluster's test
    /// PKI (`ControlPlane::kubelet_api_args`) and takes `extra_args` too, and that port.
    pub(crate) async fn with_kubelet_api(
        label: &str,
        knobs: Knobs,
        extra_args: &[&str],
    ) -> (Env, u16) {
        let cp = tokio::task::spawn_blocking(ControlPlane::shared)
            .await
            .expect("control plane");
        let port = free_port().port();
        let args = cp.kubelet_api_args(port);
        let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
        args.extend_from_slice(extra_args);
        let mut env = Env::new(label, knobs, &args).await;
        env.start_agent();
        (env, port)
    }

    /// Start (or restart) the agent process.
    pub(crate) fn start_agent(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log_path)
            .expect("agent log");
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_agent-under-test"));
        cmd.arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(["--node-name", &self.node])
            .arg("--tart-program")
            .arg(env!("CARGO_BIN_EXE_fake-tart"))
            .arg("--tart-home")
            .arg(self.home.path())
            .arg("--vm-log-dir")
            .arg(&self.vm_log_dir)
            .arg("--guest-dir")
            .arg(&self.guest_dir)
            .arg("--pod-log-dir")
            .arg(&self.pod_log_dir)
            .arg("--cert-dir")
            .arg(self._logs.path().join("pki"))
            .args(["--admin-addr", &self.admin_addr.to_string()])
            .args(["--log-format", "text"])
            .args(["--log-filter", "info,tart_kubelet=debug,kube=warn"])
            // A short Lease, so the cases that wait one out (a holder not known to be gone)
            // take seconds; an agent started again after a SIGKILL takes it at once.
            .args(["--lease-duration", "12s", "--lease-renew-interval", "3s"])
            .args(["--api-timeout", "5s"])
            // TART_HOME sits on the build host's volume, whose use and free space are not the
            // Mac's (a full CI disk would evict images between Pods, and report DiskPressure):
            // only a cache budget (`--image-cache-budget`) evicts images in tests.
            .args(
                [
                    ["--image-gc-high-threshold", "100"],
                    ["--image-gc-low-threshold", "100"],
                    ["--disk-pressure-free", "100Mi"],
                ]
                .into_iter()
                .filter(|[flag, _]| !self.extra_args.iter().any(|a| a == flag))
                .flatten(),
            )
            .args(&self.extra_args)
            .env_remove("KUBECONFIG")
            .env("CI", "1")
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .kill_on_drop(true);
        self.agent = Some(cmd.spawn().expect("spawn agent"));
    }

    /// Replace the extra command-line arguments the next [`Env::start_agent`] passes.
    pub(crate) fn set_extra_args(&mut self, args: &[&str]) {
        self.extra_args = args.iter().map(|s| s.to_string()).collect();
    }

    /// SIGKILL the agent (its VMs keep running: they are in their own sessions).
    pub(crate) async fn kill_agent(&mut self) {
        if let Some(mut c) = self.agent.take() {
            let _ = c.start_kill();
            let _ = tokio::time::timeout(Duration::from_secs(10), c.wait()).await;
        }
    }

    /// SIGTERM the agent and wait up to `within` for it to exit; returns whether it did.
    pub(crate) async fn sigterm_agent(&mut self, within: Duration) -> bool {
        let Some(mut c) = self.agent.take() else {
            return false;
        };
        if let Some(pid) = c.id() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
        tokio::time::timeout(within, c.wait()).await.is_ok()
    }

    /// The agent process's id while it runs.
    pub(crate) fn agent_pid(&self) -> Option<u32> {
        self.agent.as_ref().and_then(|c| c.id())
    }

    /// The agent's log so far (for failure messages).
    pub(crate) fn agent_log(&self) -> String {
        let s = std::fs::read_to_string(&self.log_path).unwrap_or_default();
        let lines: Vec<&str> = s.lines().collect();
        lines[lines.len().saturating_sub(60)..].join("\n")
    }

    pub(crate) fn pods(&self) -> Api<Pod> {
        Api::namespaced(self.admin.clone(), &self.ns)
    }

    /// A one-container VM Pod bound to our node (the scheduler is bypassed: `nodeName`).
    pub(crate) fn pod(&self, name: &str) -> Pod {
        vm_pod(name, &self.ns, &self.node)
    }

    pub(crate) async fn create(&self, pod: &Pod) -> Pod {
        self.pods()
            .create(&PostParams::default(), pod)
            .await
            .expect("create pod")
    }

    pub(crate) async fn create_secret(&self, name: &str, dockerconfigjson: &[u8]) {
        let api: Api<Secret> = Api::namespaced(self.admin.clone(), &self.ns);
        let s = Secret {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..Default::default()
            },
            type_: Some("kubernetes.io/dockerconfigjson".into()),
            data: Some(BTreeMap::from([(
                ".dockerconfigjson".to_string(),
                ByteString(dockerconfigjson.to_vec()),
            )])),
            ..Default::default()
        };
        api.create(&PostParams::default(), &s)
            .await
            .expect("secret");
    }

    /// Poll the Pod until `pred` holds; panics with the agent log on timeout.
    pub(crate) async fn wait_pod(
        &self,
        name: &str,
        what: &str,
        pred: impl Fn(&Pod) -> bool,
    ) -> Pod {
        let api = self.pods();
        match wait_for(WAIT, || {
            let api = api.clone();
            let pred = &pred;
            async move { api.get_opt(name).await.ok().flatten().filter(|p| pred(p)) }
        })
        .await
        {
            Ok(p) => p,
            Err(e) => {
                let now = api.get_opt(name).await.ok().flatten();
                panic!(
                    "pod {name}: {what}: {e}\nstatus now: {:#?}\nagent log:\n{}",
                    now.and_then(|p| p.status),
                    self.agent_log()
                )
            }
        }
    }

    /// Wait until the Pod is gone from the API.
    pub(crate) async fn wait_gone(&self, name: &str) {
        let api = self.pods();
        let r = wait_for(WAIT, || {
            let api = api.clone();
            async move { matches!(api.get_opt(name).await, Ok(None)).then_some(()) }
        })
        .await;
        assert!(
            r.is_ok(),
            "pod {name} not gone: {r:?}\n{}",
            self.agent_log()
        );
    }

    pub(crate) async fn delete(&self, name: &str, grace: u32) {
        let dp = DeleteParams {
            grace_period_seconds: Some(grace),
            ..Default::default()
        };
        self.pods().delete(name, &dp).await.expect("delete pod");
    }

    /// The Pod's events (events.k8s.io/v1), oldest first: (type, reason, note).
    pub(crate) async fn events(&self, pod: &str) -> Vec<(String, String, String)> {
        let api: Api<Event> = Api::namespaced(self.admin.clone(), &self.ns);
        let mut evs: Vec<Event> = api
            .list(&Default::default())
            .await
            .map(|l| l.items)
            .unwrap_or_default()
            .into_iter()
            .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(pod))
            .collect();
        evs.sort_by_key(|e| {
            (
                e.event_time.as_ref().map(|t| t.0),
                e.metadata.creation_timestamp.as_ref().map(|t| t.0),
            )
        });
        evs.into_iter()
            .map(|e| {
                (
                    e.type_.unwrap_or_default(),
                    e.reason.unwrap_or_default(),
                    e.note.unwrap_or_default(),
                )
            })
            .collect()
    }

    /// How many times each reason was reported for `pod`: Event objects, each counting its
    /// series (a repeated event is one object with `series.count`).
    pub(crate) async fn event_counts(&self, pod: &str) -> BTreeMap<String, i32> {
        let api: Api<Event> = Api::namespaced(self.admin.clone(), &self.ns);
        let mut m = BTreeMap::new();
        for e in api
            .list(&Default::default())
            .await
            .map(|l| l.items)
            .unwrap_or_default()
        {
            if e.regarding.as_ref().and_then(|r| r.name.as_deref()) != Some(pod) {
                continue;
            }
            let n = e.series.as_ref().map_or(1, |s| s.count.max(1));
            *m.entry(e.reason.unwrap_or_default()).or_default() += n;
        }
        m
    }

    /// Wait until the Pod has an event with `reason`; returns all events then.
    pub(crate) async fn wait_event(
        &self,
        pod: &str,
        reason: &str,
    ) -> Vec<(String, String, String)> {
        match wait_for(WAIT, || async {
            let e = self.events(pod).await;
            e.iter().any(|(_, r, _)| r == reason).then_some(e)
        })
        .await
        {
            Ok(e) => e,
            Err(err) => panic!(
                "no {reason} event for {pod}: {err}; events: {:?}\n{}",
                self.events(pod).await,
                self.agent_log()
            ),
        }
    }

    /// `kubectl` (the real client) in the test's namespace, as the cluster's admin: whether it
    /// succeeded, its stdout and stderr. A call that takes 30 s fails the test: a hung agent
    /// must not hang it.
    pub(crate) async fn kubectl(&self, args: &[&str]) -> (bool, String, String) {
        let kc = self.cp.kubeconfig_path().display().to_string();
        let mut all = vec!["--kubeconfig", kc.as_str(), "-n", self.ns.as_str()];
        all.extend_from_slice(args);
        let run = tart_kubelet_tests::cluster::testing::run_program("kubectl", &all);
        tokio::time::timeout(Duration::from_secs(30), run)
            .await
            .unwrap_or_else(|_| panic!("kubectl {args:?} hung"))
    }

    /// `kubectl <args>` as the cluster's admin with `stdin` as its input (`apply -f -`): its
    /// stdout. Fails the test when kubectl fails or takes over 60 s.
    pub(crate) async fn kubectl_stdin(&self, args: &[&str], stdin: &str) -> String {
        use tokio::io::AsyncWriteExt as _;
        let kc = self.cp.kubeconfig_path().display().to_string();
        let mut child = tokio::process::Command::new("kubectl")
            .args(["--kubeconfig", &kc, "--request-timeout", "20s"])
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("kubectl");
        let mut input = child.stdin.take().expect("stdin");
        input
            .write_all(stdin.as_bytes())
            .await
            .expect("kubectl stdin");
        drop(input);
        let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
            .await
            .unwrap_or_else(|_| panic!("kubectl {args:?} hung"))
            .expect("kubectl output");
        assert!(
            out.status.success(),
            "kubectl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `kubectl <args>` in the test's namespace, as the cluster's admin, ready to spawn: stdin
    /// `/dev/null`, stdout and stderr piped, killed when dropped.
    pub(crate) fn kubectl_command(&self, args: &[&str]) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new("kubectl");
        cmd.arg("--kubeconfig")
            .arg(self.cp.kubeconfig_path())
            .args(["-n", &self.ns])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        cmd
    }

    /// A Pod like [`Env::pod`] whose container runs `script` with `/bin/sh -c`.
    pub(crate) fn shell_pod(&self, name: &str, script: &str) -> Pod {
        let mut pod = self.pod(name);
        pod.spec.as_mut().expect("spec").containers[0].command =
            Some(vec!["/bin/sh".into(), "-c".into(), script.into()]);
        pod
    }

    /// `/metrics` of the agent.
    pub(crate) async fn metrics(&self) -> String {
        let fetch = async {
            let mut s = tokio::net::TcpStream::connect(self.admin_addr).await.ok()?;
            let req = format!(
                "GET /metrics HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
                self.admin_addr
            );
            s.write_all(req.as_bytes()).await.ok()?;
            let mut buf = Vec::new();
            s.read_to_end(&mut buf).await.ok()?;
            Some(String::from_utf8_lossy(&buf).into_owned())
        };
        tokio::time::timeout(Duration::from_secs(10), fetch)
            .await
            .ok()
            .flatten()
            .unwrap_or_default()
    }

    /// The value of one sample line (`name{labels}` exactly as exposed), if present.
    pub(crate) async fn metric(&self, series: &str) -> Option<f64> {
        let text = self.metrics().await;
        text.lines().find_map(|l| {
            l.strip_prefix(series)?
                .strip_prefix(' ')?
                .trim()
                .parse()
                .ok()
        })
    }

    /// Local VM names in the fake home.
    /// The Pods' VMs in the fake home (golden bases left out: see [`Env::goldens`]).
    pub(crate) fn vms(&self) -> Vec<String> {
        self.local_vms()
            .into_iter()
            .filter(|n| !tart_kubelet_tests::fake::is_golden(n))
            .collect()
    }

    /// The golden base VMs in the fake home (one per image digest, kept after their Pods).
    pub(crate) fn goldens(&self) -> Vec<String> {
        self.local_vms()
            .into_iter()
            .filter(|n| tart_kubelet_tests::fake::is_golden(n))
            .collect()
    }

    fn local_vms(&self) -> Vec<String> {
        std::fs::read_dir(self.home.path().join("vms"))
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The VM name of a Pod (the agent's naming: prefix + UID).
    pub(crate) fn vm_of(pod: &Pod) -> String {
        format!("tkl-{}", pod.uid().expect("uid"))
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        if let Some(c) = self.agent.as_mut() {
            let _ = c.start_kill();
        }
        // VMs are detached `fake-tart run` processes, and a killed agent leaves its in-flight
        // tart commands (own process groups) behind: end every process of our TART_HOME.
        for pid in tart_kubelet_tests::fake::processes_of_home(self.home.path()) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

/// Pod phase.
/// A one-container VM Pod `ns/name` bound to `node` (the scheduler is bypassed: `nodeName`).
pub(crate) fn vm_pod(name: &str, ns: &str, node: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(ns.into()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            node_name: Some(node.into()),
            automount_service_account_token: Some(false),
            termination_grace_period_seconds: Some(10),
            tolerations: Some(vec![Toleration {
                operator: Some("Exists".into()),
                ..Default::default()
            }]),
            containers: vec![Container {
                name: "vm".into(),
                image: Some("ghcr.io/cirruslabs/macos-sequoia-base:latest".into()),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: None,
    }
}

pub(crate) fn phase(p: &Pod) -> &str {
    p.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

/// `1/1` ready.
pub(crate) fn ready(p: &Pod) -> bool {
    p.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .is_some_and(|c| c.len() == 1 && c[0].ready)
}

/// The single container's `restartCount` (0 before it has a status).
pub(crate) fn restart_count(p: &Pod) -> i32 {
    p.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|c| c.first())
        .map_or(0, |c| c.restart_count)
}

/// The single container's status.
fn container(p: &Pod) -> Option<&ContainerStatus> {
    p.status.as_ref()?.container_statuses.as_ref()?.first()
}

/// The single container's waiting reason.
pub(crate) fn waiting_reason(p: &Pod) -> Option<String> {
    container(p)?
        .state
        .as_ref()?
        .waiting
        .as_ref()?
        .reason
        .clone()
}

/// The single container's waiting message (empty when it has none).
pub(crate) fn waiting_message(p: &Pod) -> String {
    container(p)
        .and_then(|c| c.state.as_ref()?.waiting.as_ref()?.message.clone())
        .unwrap_or_default()
}

/// Names of `pods` in `reasons` order check: each reason appears, in this order.
pub(crate) fn in_order(events: &[(String, String, String)], reasons: &[&str]) -> bool {
    let mut it = events.iter().map(|(_, r, _)| r.as_str());
    reasons.iter().all(|want| it.any(|r| r == *want))
}

/// The single container's current terminated state, once it ended for good.
pub(crate) fn terminated(p: &Pod) -> Option<ContainerStateTerminated> {
    container(p)?.state.as_ref()?.terminated.clone()
}

/// The single container's last terminated run (`lastState.terminated`), after a restart.
pub(crate) fn last_terminated(p: &Pod) -> Option<ContainerStateTerminated> {
    container(p)?.last_state.as_ref()?.terminated.clone()
}

/// A run the agent stopped itself reports the signal the job got (143 SIGTERM, 137 SIGKILL)
/// with reason `Error`: never exit 0 or `Completed`.
pub(crate) fn assert_agent_stopped(t: &ContainerStateTerminated, what: &str) {
    assert!(
        [137, 143].contains(&t.exit_code),
        "{what}: exit code {} (want the signal's, 137 or 143): {t:?}",
        t.exit_code
    );
    assert_eq!(t.reason.as_deref(), Some("Error"), "{what}: {t:?}");
}

/// Wait for the `restartPolicy: Never` Pod `name`, whose run the agent stopped, to end: it
/// must be `Failed` (never `Succeeded`), unrestarted, with the signal's code. Its end.
pub(crate) async fn wait_failed_by_agent(
    env: &Env,
    name: &str,
    what: &str,
) -> ContainerStateTerminated {
    let p = env
        .wait_pod(name, "ended", |p| {
            matches!(phase(p), "Failed" | "Succeeded")
        })
        .await;
    assert_eq!(phase(&p), "Failed", "{what}: {:?}", p.status);
    assert_eq!(restart_count(&p), 0, "{what}");
    let t = terminated(&p).expect("the stopped run is the container's end");
    assert_agent_stopped(&t, what);
    t
}
