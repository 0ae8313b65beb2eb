//! End to end: `kubectl port-forward` (v1.32) through the real API server (v1.20.2) to the
//! agent's kubelet API over SPDY (`portforward.k8s.io`; kubectl's first attempt, the
//! SPDY-over-WebSocket tunnel, is refused), to a guest port fake-tart serves on the VM's
//! loopback address: an HTTP request reaches the guest twice over one session, and a port
//! nothing listens on gets kubelet's error line; a server-first protocol (a stand-in for the
//! guest's Screen Sharing on port 5900) works both ways. Debian's python3-kubernetes
//! `portforward()` reaches the same port over the legacy WebSocket port-forward.
//!
//! Run: `cargo test -p tart-kubelet-tests --test e2e kubelet_port_forward:: -- --nocapture`

use crate::pod_support;

use std::{process::Stdio, time::Duration};

use k8s_openapi::api::core::v1::Pod;
use pod_support::{Env, phase};
use tart_kubelet_tests::{
    agent::free_port,
    cluster::ControlPlane,
    fake::{EndpointState, Knobs, VmKnob},
};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

async fn env(label: &str) -> Env {
    let cp = tokio::task::spawn_blocking(ControlPlane::shared)
        .await
        .expect("control plane");
    let args = cp.kubelet_api_args(free_port().expect("free port").port());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let knobs = Knobs::new().with_loopback_ips().with_vm(
        "*",
        VmKnob::default()
            .running_guest_launcher()
            .with_endpoint(8080, EndpointState::Healthy),
    );
    let mut env = Env::new(label, knobs, &args).await;
    env.start_agent();
    env
}

/// Creates the Pod `job` (a shell that sleeps) and waits until it runs with an IP.
async fn running_job(env: &Env) -> Pod {
    let mut pod = env.pod("job");
    pod.spec.as_mut().unwrap().containers[0].command =
        Some(vec!["/bin/sh".into(), "-c".into(), "sleep 600".into()]);
    env.create(&pod).await;
    env.wait_pod("job", "Running with an IP", |p| {
        phase(p) == "Running" && p.status.as_ref().is_some_and(|s| s.pod_ip.is_some())
    })
    .await
}

/// Starts `kubectl port-forward pod/job <local>:<remote>` and waits for its "Forwarding" line.
async fn forward(env: &Env, remote: u16) -> (tokio::process::Child, u16) {
    let local = free_port().expect("free port").port();
    let mut child = tokio::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(env.cp.kubeconfig_path())
        .args(["-n", &env.ns, "port-forward", "pod/job"])
        .arg(format!("{local}:{remote}"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("kubectl port-forward");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
        .await
        .unwrap_or_else(|_| panic!("port-forward never ready\n{}", env.agent_log()));
    let line = line.unwrap().unwrap_or_default();
    assert!(line.starts_with("Forwarding from"), "{line}");
    // kubectl prints a line per connection: a closed stdout would kill it (SIGPIPE).
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, local)
}

/// One HTTP/1.0 GET through the local port; what came back.
async fn get(port: u16) -> String {
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect to the forwarded port");
    s.write_all(b"GET / HTTP/1.0\r\n\r\n").await.unwrap();
    let mut out = Vec::new();
    // A reset after a partial answer keeps what came; the caller judges it.
    let _ = tokio::time::timeout(Duration::from_secs(30), s.read_to_end(&mut out))
        .await
        .expect("an answer within 30 s");
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_port_forward_reaches_the_guests_port() {
    let env = env("forward").await;
    running_job(&env).await;

    let (mut child, local) = forward(&env, 8080).await;
    for round in 0..2 {
        let answer = get(local).await;
        if answer.is_empty() {
            let _ = child.kill().await;
            let mut err = String::new();
            let _ = child.stderr.take().unwrap().read_to_string(&mut err).await;
            panic!("kubectl: {err}\n{}", env.agent_log());
        }
        assert!(
            answer.starts_with("HTTP/1.1 200 OK") && answer.contains("healthy"),
            "round {round}: {answer:?}\n{}",
            env.agent_log()
        );
    }
    let _ = child.kill().await;

    // Nothing listens on 9090: kubectl reports kubelet's line and ends the session.
    let (mut child, local) = forward(&env, 9090).await;
    let _ = get(local).await;
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("kubectl ends after the error")
        .unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .await
        .unwrap();
    assert!(!status.success());
    assert!(
        err.contains("error forwarding port 9090 to pod job"),
        "{err}\n{}",
        env.agent_log()
    );
}

/// What a guest's macOS Screen Sharing says first on port 5900: its RFB version (Apple's
/// server announces 3.889; docs/pods.md, "Seeing the guest's screen").
const RFB_SERVER_VERSION: &[u8] = b"RFB 003.889\n";
/// A VNC client's answer.
const RFB_CLIENT_VERSION: &[u8] = b"RFB 003.008\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_port_forward_reaches_a_screen_sharing_stand_in_on_the_guests_port_5900() {
    let env = env("forward-vnc").await;
    let pod = running_job(&env).await;
    let ip: std::net::IpAddr = pod.status.unwrap().pod_ip.unwrap().parse().unwrap();
    assert!(ip.is_loopback(), "{ip}");

    // The guest's Screen Sharing, standing in on the guest's own address: it speaks first,
    // then reads the client's version and offers one security type (30, Apple's).
    let listener = tokio::net::TcpListener::bind((ip, 5900))
        .await
        .expect("bind the guest's port 5900");
    let server = tokio::spawn(async move {
        let (mut conn, _) = listener.accept().await.expect("accept");
        conn.write_all(RFB_SERVER_VERSION).await.unwrap();
        let mut version = [0u8; 12];
        conn.read_exact(&mut version).await.unwrap();
        conn.write_all(&[1, 30]).await.unwrap();
        version
    });

    let (mut child, local) = forward(&env, 5900).await;
    let mut vnc = tokio::net::TcpStream::connect(("127.0.0.1", local))
        .await
        .expect("connect to the forwarded port");
    let mut greeting = [0u8; 12];
    let read = tokio::time::timeout(Duration::from_secs(30), vnc.read_exact(&mut greeting)).await;
    assert!(
        matches!(read, Ok(Ok(_))),
        "no RFB greeting: {read:?}\n{}",
        env.agent_log()
    );
    assert_eq!(&greeting, RFB_SERVER_VERSION);
    vnc.write_all(RFB_CLIENT_VERSION).await.unwrap();
    let mut security = [0u8; 2];
    tokio::time::timeout(Duration::from_secs(30), vnc.read_exact(&mut security))
        .await
        .expect("the security types within 30 s")
        .unwrap();
    assert_eq!(security, [1, 30]);
    let version = tokio::time::timeout(Duration::from_secs(30), server)
        .await
        .expect("the stand-in finished")
        .unwrap();
    assert_eq!(&version, RFB_CLIENT_VERSION);
    let _ = child.kill().await;
}

/// Debian's python3-kubernetes: `portforward()`, the legacy WebSocket port-forward
/// (`?ports=`, `v4.channel.k8s.io`), one HTTP/1.0 GET through its socket.
const PYTHON_FORWARD: &str = r#"
import json, sys
from kubernetes import client, config
from kubernetes.stream import portforward
config.load_kube_config(config_file=sys.argv[1])
core = client.CoreV1Api()
pf = portforward(core.connect_get_namespaced_pod_portforward, sys.argv[3], sys.argv[2],
                 ports="8080")
s = pf.socket(8080)
s.settimeout(30)
s.sendall(b"GET / HTTP/1.0\r\n\r\n")
data = b""
while True:
    chunk = s.recv(4096)
    if not chunk:
        break
    data += chunk
s.close()
print(json.dumps({"data": data.decode("utf-8", "replace"), "error": pf.error(8080)}))
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_kubernetes_portforward_reaches_the_guests_port_over_websocket() {
    let env = env("forward-ws").await;
    running_job(&env).await;

    // Debian's interpreter, where python3-kubernetes is installed (tests/cluster/build.sh).
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::process::Command::new("/usr/bin/python3")
            .arg("-c")
            .arg(PYTHON_FORWARD)
            .arg(env.cp.kubeconfig_path())
            .arg(&env.ns)
            .arg("job")
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("python finished within 60 s")
    .expect("python");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}\n{}", env.agent_log());
    let v: serde_json::Value =
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{stdout:?}: {e}"));
    let data = v["data"].as_str().unwrap_or_default();
    assert!(
        data.starts_with("HTTP/1.1 200 OK") && data.contains("healthy"),
        "{v}\n{}",
        env.agent_log()
    );
    let log = std::fs::read_to_string(&env.log_path).unwrap_or_default();
    assert!(
        log.lines()
            .any(|l| l.contains("port-forward session ended") && l.contains("websocket")),
        "{}",
        env.agent_log()
    );
}
