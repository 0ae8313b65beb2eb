//! End-to-end: an agent started without `--tls-cert-file`/`--tls-private-key-file` requests its
//! kubelet API serving certificate through the CSR API on the real control plane (signer
//! `kubernetes.io/kubelet-serving`), says so while the request waits (a Node event, `doctor`,
//! nothing listening on its port), and serves once an operator approves it and the
//! controller-manager's csrsigning controller signs it with the cluster CA: the API server,
//! which verifies kubelets against that CA (`--kubelet-certificate-authority`), then reaches the
//! agent through the node proxy. A restarted agent serves the stored certificate again without
//! a new request. An agent running as its node needs nothing beyond the Node authorizer. With
//! short-lived certificates (a private control plane), the renewal asks again while the old
//! certificate keeps serving, and the renewed one is served once issued.
//!
//! Run: `cargo test -p tart-kubelet-tests --test e2e kubelet_csr:: -- --nocapture`

use crate::pod_support;

use std::{os::unix::fs::PermissionsExt as _, path::Path, time::Duration};

use k8s_openapi::api::{certificates::v1::CertificateSigningRequest, core::v1::Event};
use kube::{Api, ResourceExt as _};
use pod_support::{Env, WAIT};
use tart_kubelet_tests::{
    agent::{Agent, AgentOptions, free_port},
    cluster::{ControlPlane, testing::run_program, wait_for},
    fake::Knobs,
};

/// `kubectl --kubeconfig <admin> args...`: (success, stdout, stderr).
async fn kubectl(env: &Env, args: &[&str]) -> (bool, String, String) {
    let kc = env.cp.kubeconfig_path().display().to_string();
    let mut all = vec!["--kubeconfig", kc.as_str(), "--request-timeout", "20s"];
    all.extend_from_slice(args);
    run_program("kubectl", &all).await
}

/// The serving certificate requests of `env`'s Node (the agent names them `<node>.serving-…`).
async fn requests(env: &Env) -> Vec<CertificateSigningRequest> {
    let api: Api<CertificateSigningRequest> = Api::all(env.admin.clone());
    let prefix = format!("{}.serving-", env.node);
    tokio::time::timeout(Duration::from_secs(20), api.list(&Default::default()))
        .await
        .ok()
        .and_then(Result::ok)
        .map(|l| l.items)
        .unwrap_or_default()
        .into_iter()
        .filter(|c| c.name_any().starts_with(&prefix))
        .collect()
}

/// The Node's events in `default` (core/v1, as kubelet writes them): (type, reason, message).
async fn node_events(env: &Env) -> Vec<(String, String, String)> {
    let api: Api<Event> = Api::namespaced(env.admin.clone(), "default");
    tokio::time::timeout(Duration::from_secs(20), api.list(&Default::default()))
        .await
        .ok()
        .and_then(Result::ok)
        .map(|l| l.items)
        .unwrap_or_default()
        .into_iter()
        .filter(|e| e.involved_object.name.as_deref() == Some(env.node.as_str()))
        .map(|e| {
            (
                e.type_.unwrap_or_default(),
                e.reason.unwrap_or_default(),
                e.message.unwrap_or_default(),
            )
        })
        .collect()
}

/// `tart-kubelet doctor` with the agent's own kubeconfig and settings: (exit code, output).
async fn doctor(env: &Env, port: u16, cert_dir: &Path) -> (Option<i32>, String) {
    let port = port.to_string();
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_agent-under-test"));
    cmd.arg("doctor")
        .arg("--kubeconfig")
        .arg(&env.kubeconfig)
        .args(["--node-name", &env.node, "--call-timeout", "10"])
        .arg("--tart-program")
        .arg(env!("CARGO_BIN_EXE_fake-tart"))
        .arg("--tart-home")
        .arg(env.home.path())
        .args(["--kubelet-port", &port])
        .arg("--cert-dir")
        .arg(cert_dir)
        .arg("--client-ca-file")
        .arg(env.cp.ca_cert_path())
        .env_remove("KUBECONFIG")
        .env("CI", "1")
        .kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(120), cmd.output())
        .await
        .expect("doctor finished within 120 s")
        .expect("doctor ran");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}

/// Whether anything accepts a TCP connection on `127.0.0.1:<port>`.
async fn listening(port: u16) -> bool {
    matches!(
        tokio::time::timeout(
            Duration::from_secs(5),
            tokio::net::TcpStream::connect(("127.0.0.1", port)),
        )
        .await,
        Ok(Ok(_))
    )
}

/// Waits until the API server reaches the agent's `/healthz` through the node proxy.
async fn wait_proxy_healthz(env: &Env) {
    let healthz = format!("/api/v1/nodes/{}/proxy/healthz", env.node);
    let last = std::sync::Mutex::new(String::new());
    let r = wait_for(WAIT, || async {
        let (ok, out, err) = kubectl(env, &["get", "--raw", &healthz]).await;
        *last.lock().unwrap() = format!("{out}{err}");
        (ok && out == "ok").then_some(())
    })
    .await;
    assert!(
        r.is_ok(),
        "node proxy healthz never ok (last: {}); agent log:\n{}",
        last.lock().unwrap(),
        env.agent_log()
    );
}

/// An agent listening on its own loopback port with the cluster CA for client certificates
/// and no certificate files (as its node when `as_node`); started. Returns it, its port and
/// its `--cert-dir`.
async fn start(label: &str, as_node: bool) -> (Env, u16, std::path::PathBuf) {
    let port = free_port().expect("free port").port();
    let port_s = port.to_string();
    let cp = ControlPlane::shared_async().await;
    let ca = cp.ca_cert_path().display().to_string();
    let args = [
        "--kubelet-address",
        "127.0.0.1",
        "--kubelet-port",
        &port_s,
        "--client-ca-file",
        &ca,
    ];
    let knobs = Knobs::new().with_latency_scale(0.001);
    let mut env = match as_node {
        true => Env::new_as_node(label, knobs, &args).await,
        false => Env::new(label, knobs, &args).await,
    };
    let cert_dir = env.log_path.with_file_name("pki");
    env.start_agent();
    (env, port, cert_dir)
}

/// The first serving request of `env`'s Node, waited for.
async fn first_request(env: &Env) -> CertificateSigningRequest {
    wait_for(WAIT, || async { requests(env).await.into_iter().next() })
        .await
        .unwrap_or_else(|e| panic!("no serving request: {e}; agent log:\n{}", env.agent_log()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_without_certificate_files_serves_once_its_request_is_approved() {
    let (mut env, port, cert_dir) = start("kcsr", false).await;

    // The request: the node's subject and names, kubelet's usages, made by the agent's user.
    let csr = first_request(&env).await;
    let name = csr.name_any();
    assert_eq!(csr.spec.signer_name, "kubernetes.io/kubelet-serving");
    assert_eq!(
        csr.spec.usages.as_deref().unwrap_or_default(),
        ["digital signature", "key encipherment", "server auth"]
    );
    assert_eq!(
        csr.spec.username.as_deref(),
        Some(format!("tart-kubelet-{}", env.node).as_str())
    );
    let pem = String::from_utf8_lossy(&csr.spec.request.0).into_owned();
    let req_pem = env.log_path.with_file_name("request.pem");
    std::fs::write(&req_pem, &pem).expect("write request");
    let (ok, text, err) = run_program(
        "openssl",
        &[
            "req",
            "-noout",
            "-text",
            "-verify",
            "-in",
            req_pem.to_str().unwrap(),
        ],
    )
    .await;
    assert!(ok, "openssl req: {err}");
    assert!(
        text.contains(&format!("O = system:nodes, CN = system:node:{}", env.node))
            && text.contains(&format!("DNS:{}", env.node))
            && text.contains("IP Address:127.0.0.1"),
        "{text}"
    );

    // While it waits: a Warning naming the request, nothing on the port, doctor says pending.
    let pending = wait_for(WAIT, || async {
        node_events(&env)
            .await
            .into_iter()
            .find(|(_, reason, _)| reason == "ServingCertificatePending")
    })
    .await
    .unwrap_or_else(|e| panic!("no pending event: {e}; agent log:\n{}", env.agent_log()));
    assert_eq!(pending.0, "Warning");
    assert!(
        pending.2.contains(&name) && pending.2.contains("pending approval"),
        "{pending:?}"
    );
    assert!(
        !listening(port).await,
        "the kubelet API listens before approval"
    );
    let (_, report) = doctor(&env, port, &cert_dir).await;
    assert!(
        report.contains(&format!(
            "serving certificate request {name} is pending approval"
        )),
        "{report}"
    );

    // The operator approves; csrsigning issues; the API server verifies the served certificate.
    let (ok, out, err) = kubectl(&env, &["certificate", "approve", &name]).await;
    assert!(ok, "approve: {out}{err}");
    wait_proxy_healthz(&env).await;
    let issued = node_events(&env).await;
    assert!(
        issued
            .iter()
            .any(|(t, r, m)| t == "Normal" && r == "ServingCertificateIssued" && m.contains(&name)),
        "{issued:?}"
    );
    let current = cert_dir.join("kubelet-server-current.pem");
    let mode = std::fs::metadata(&current)
        .unwrap_or_else(|e| panic!("{}: {e}", current.display()))
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    assert!(!cert_dir.join("kubelet-server-pending.key").exists());
    let (_, report) = doctor(&env, port, &cert_dir).await;
    assert!(
        report.contains("with a certificate from the CSR API, valid until"),
        "{report}"
    );

    // A restart serves the stored certificate: no second request.
    env.kill_agent().await;
    env.start_agent();
    wait_proxy_healthz(&env).await;
    let log = std::fs::read_to_string(&env.log_path).unwrap_or_default();
    assert!(
        log.contains("serving certificate loaded from the certificate directory"),
        "{}",
        env.agent_log()
    );
    let names: Vec<String> = requests(&env).await.iter().map(|c| c.name_any()).collect();
    assert_eq!(names, std::slice::from_ref(&name));
    let _ = kubectl(&env, &["delete", "csr", &name]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn as_its_node_the_agent_requests_with_the_node_authorizers_grants_alone() {
    let (env, _, _) = start("kcsr-node", true).await;
    let csr = first_request(&env).await;
    let name = csr.name_any();
    assert_eq!(
        csr.spec.username.as_deref(),
        Some(format!("system:node:{}", env.node).as_str())
    );
    let (ok, out, err) = kubectl(&env, &["certificate", "approve", &name]).await;
    assert!(ok, "approve: {out}{err}");
    wait_proxy_healthz(&env).await;
    let log = std::fs::read_to_string(&env.log_path).unwrap_or_default();
    assert!(!log.contains("forbidden"), "a request was refused:\n{log}");
    let _ = kubectl(&env, &["delete", "csr", &name]).await;
}

/// The certificate the agent serves on `port` (PEM of the leaf), from a TLS handshake.
async fn served_certificate(port: u16) -> Option<String> {
    let addr = format!("127.0.0.1:{port}");
    let (_, out, _) = run_program("openssl", &["s_client", "-connect", &addr]).await;
    let start = out.find("-----BEGIN CERTIFICATE-----")?;
    let end = out.find("-----END CERTIFICATE-----")?;
    Some(out[start..end].to_owned())
}

/// `kubectl` against `cp` as its admin: (success, stdout, stderr).
async fn kubectl_on(cp: &ControlPlane, args: &[&str]) -> (bool, String, String) {
    let kc = cp.kubeconfig_path().display().to_string();
    let mut all = vec!["--kubeconfig", kc.as_str(), "--request-timeout", "20s"];
    all.extend_from_slice(args);
    run_program("kubectl", &all).await
}

/// Names of `node`'s serving requests on `cp`, oldest first, with whether each is decided.
async fn requests_on(cp: &ControlPlane, node: &str) -> Vec<(String, bool)> {
    let (_, out, _) = kubectl_on(cp, &["get", "csr", "-o", "json"]).await;
    let list: serde_json::Value = serde_json::from_str(&out).unwrap_or_default();
    let mut items: Vec<(String, String, bool)> = list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| {
            let name = c["metadata"]["name"].as_str()?;
            name.starts_with(&format!("{node}.serving-")).then(|| {
                let created = c["metadata"]["creationTimestamp"].as_str().unwrap_or("");
                let decided = c["status"]["conditions"]
                    .as_array()
                    .is_some_and(|c| !c.is_empty());
                (created.to_owned(), name.to_owned(), decided)
            })
        })
        .collect();
    items.sort();
    items.into_iter().map(|(_, n, d)| (n, d)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_lived_certificate_is_renewed_while_the_old_one_keeps_serving() {
    // Certificates of 7 minutes: the signer dates them 5 minutes back, so the renewal point
    // (70–90 % of the lifetime) comes at most about 80 s after issuance, and the first
    // certificate is still valid for 2 minutes then.
    let cp = tokio::task::spawn_blocking(|| {
        tart_kubelet_tests::cluster::build()?;
        ControlPlane::start_private_with("kcsr-renew", &["--signing-duration", "7m"])
    })
    .await
    .expect("join")
    .expect("private control plane");
    let node = tart_kubelet_tests::cluster::unique("mac-kcsr-renew");
    let kubeconfig = cp.mint_kubeconfig(&format!("system:node:{node}"), &["system:nodes"]);
    let port = free_port().expect("free port").port();
    let opts = AgentOptions::new(
        env!("CARGO_BIN_EXE_agent-under-test"),
        env!("CARGO_BIN_EXE_fake-tart"),
        kubeconfig,
        &node,
    )
    .args([
        "--identity".to_string(),
        "node".into(),
        "--kubelet-address".into(),
        "127.0.0.1".into(),
        "--kubelet-port".into(),
        port.to_string(),
        "--client-ca-file".into(),
        cp.ca_cert_path().display().to_string(),
        "--api-timeout".into(),
        "5s".into(),
    ]);
    let agent = Agent::start(opts).await.expect("agent");
    let healthz = format!("/api/v1/nodes/{node}/proxy/healthz");
    let proxied = || async {
        let (ok, out, _) = kubectl_on(&cp, &["get", "--raw", &healthz]).await;
        ok && out == "ok"
    };

    let first = wait_for(WAIT, || async { requests_on(&cp, &node).await.pop() })
        .await
        .unwrap_or_else(|e| panic!("no request: {e}\n{}", agent.log_tail(40)));
    let (ok, _, err) = kubectl_on(&cp, &["certificate", "approve", &first.0]).await;
    assert!(ok, "approve: {err}");
    let old = wait_for(WAIT, || async {
        match proxied().await {
            true => served_certificate(port).await,
            false => None,
        }
    })
    .await
    .unwrap_or_else(|e| panic!("never served: {e}\n{}", agent.log_tail(40)));

    // The renewal asks with a new key; the old certificate is served while it waits.
    let second = wait_for(Duration::from_secs(150), || async {
        requests_on(&cp, &node)
            .await
            .into_iter()
            .find(|(n, decided)| *n != first.0 && !decided)
    })
    .await
    .unwrap_or_else(|e| panic!("no renewal request: {e}\n{}", agent.log_tail(40)));
    assert!(proxied().await, "the old certificate stopped serving");
    assert_eq!(
        served_certificate(port).await.as_deref(),
        Some(old.as_str())
    );

    let (ok, _, err) = kubectl_on(&cp, &["certificate", "approve", &second.0]).await;
    assert!(ok, "approve: {err}");
    let new = wait_for(WAIT, || async {
        served_certificate(port).await.filter(|c| *c != old)
    })
    .await
    .unwrap_or_else(|e| {
        panic!(
            "renewed certificate never served: {e}\n{}",
            agent.log_tail(40)
        )
    });
    assert_ne!(new, old);
    assert!(
        proxied().await,
        "the renewed certificate is not verified by the API server"
    );
    assert!(
        agent.log().contains("renewed serving certificate in use"),
        "{}",
        agent.log_tail(40)
    );
}
