//! End-to-end: kubelet's TLS bootstrap on the real control plane. An operator's cluster-side
//! steps (docs/node.md "TLS bootstrap": a bootstrap token Secret and the ClusterRoleBindings
//! kubeadm makes for `system:bootstrappers` and `system:nodes`, applied as written there) on a
//! control plane of the test's own whose signer issues 7-minute certificates (the signer dates
//! them 5 minutes back: each must be renewed about a minute after issuance and lapses two
//! minutes after it). The agent starts with only the bootstrap token, gets its certificate
//! through the CSR API (approved by kube-controller-manager's approver), runs as
//! `system:node:<name>`, and renews the certificate twice with the current one while a Pod
//! keeps running and the Node stays Ready — past the end of the first two certificates, which
//! only a running client that presents the renewed ones survives.
//!
//! Run: `cargo test -p tart-kubelet-tests --test e2e node_bootstrap:: -- --nocapture`

use std::{
    os::unix::fs::PermissionsExt as _,
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::Duration,
};

use crate::pod_support::vm_pod;
use k8s_openapi::api::{
    certificates::v1::CertificateSigningRequest,
    core::v1::{Node, Pod},
};
use kube::{Api, ResourceExt as _, api::PostParams};
use tart_kubelet_tests::{
    agent::{Agent, AgentOptions, free_port},
    cluster::{ControlPlane, testing::run_program, unique, wait_for},
};

/// How long one step may take on a shared, slow machine.
const WAIT: Duration = Duration::from_secs(120);

/// `kubectl --kubeconfig <admin of cp> args...`: (success, stdout, stderr).
async fn kubectl(cp: &ControlPlane, args: &[&str]) -> (bool, String, String) {
    let kc = cp.kubeconfig_path().display().to_string();
    let mut all = vec!["--kubeconfig", kc.as_str(), "--request-timeout", "20s"];
    all.extend_from_slice(args);
    run_program("kubectl", &all).await
}

/// The guide's manifest (the ```yaml block of docs/node.md that starts `# tls-bootstrap.yaml`)
/// with the token filled in.
fn guide_manifest(id: &str, secret: &str) -> String {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/node.md"))
            .expect("docs/node.md");
    let start = doc
        .find("```yaml\n# tls-bootstrap.yaml")
        .expect("docs/node.md has the tls-bootstrap.yaml block")
        + "```yaml\n".len();
    let len = doc[start..].find("```").expect("the block ends");
    doc[start..start + len]
        .replace("<TOKEN_ID>", id)
        .replace("<TOKEN_SECRET>", secret)
}

/// `n` characters of `[a-z0-9]`.
fn token_part(n: usize) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    (0..n)
        .map(|_| ALPHABET[rand::random_range(0..ALPHABET.len())] as char)
        .collect()
}

/// A facts line of `openssl x509` about the first certificate in `pem`: (subject, serial,
/// notAfter as Unix seconds).
async fn certificate_facts(pem: &Path) -> Option<(String, String, i64)> {
    let path = pem.to_str()?;
    let (ok, out, _) = run_program(
        "openssl",
        &[
            "x509", "-noout", "-subject", "-serial", "-enddate", "-dateopt", "iso_8601", "-in",
            path,
        ],
    )
    .await;
    if !ok {
        return None;
    }
    let field = |k: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix(k))
            .map(|v| v.trim().to_owned())
    };
    let end: k8s_openapi::jiff::Timestamp = field("notAfter=")?.replace(' ', "T").parse().ok()?;
    Some((field("subject=")?, field("serial=")?, end.as_second()))
}

fn now_secs() -> i64 {
    k8s_openapi::jiff::Timestamp::now().as_second()
}

/// The file the agent's kubeconfig names as its client certificate.
fn pair_file(kubeconfig: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(kubeconfig).ok()?;
    let kc = kube::config::Kubeconfig::from_yaml(&text).ok()?;
    let auth = kc.auth_infos.first()?.auth_info.as_ref()?;
    auth.client_certificate.as_ref().map(PathBuf::from)
}

fn ready(node: &Node) -> Option<String> {
    node.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready")
        .map(|c| c.status.clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_with_only_a_bootstrap_token_becomes_its_node_and_renews_twice_while_ready() {
    let cp = tokio::task::spawn_blocking(|| {
        tart_kubelet_tests::cluster::build()?;
        ControlPlane::start_private_with("boot", &["--signing-duration", "7m"])
    })
    .await
    .expect("join")
    .expect("private control plane");
    let admin = cp.admin_client().await;
    // The shipped RBAC (its last two Roles are the node identity's, docs/node.md "Identities").
    crate::node_support::apply_rbac(&cp).await;

    // The operator's steps, as docs/node.md writes them.
    let (id, secret) = (token_part(6), token_part(16));
    let dir = tempfile::Builder::new()
        .prefix("boot-e2e-")
        .tempdir()
        .unwrap();
    let manifest = dir.path().join("tls-bootstrap.yaml");
    std::fs::write(&manifest, guide_manifest(&id, &secret)).unwrap();
    let (ok, _, err) = kubectl(&cp, &["apply", "-f", manifest.to_str().unwrap()]).await;
    assert!(ok, "kubectl apply of the guide's manifest: {err}");
    let boot = dir.path().join("bootstrap.kubeconfig");
    std::fs::write(
        &boot,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: default\n  cluster:\n    server: {}\n    certificate-authority: {}\nusers:\n- name: tls-bootstrap\n  user:\n    token: {id}.{secret}\ncontexts:\n- name: default\n  context:\n    cluster: default\n    user: tls-bootstrap\ncurrent-context: default\n",
            cp.server_url(),
            cp.ca_cert_path().display()
        ),
    )
    .unwrap();

    // The agent: only the bootstrap token, and where to keep its own kubeconfig.
    let node = unique("mac-boot");
    let kubeconfig = dir.path().join("agent").join("kubeconfig");
    let port = free_port().expect("free port").port();
    let opts = AgentOptions::new(
        env!("CARGO_BIN_EXE_agent-under-test"),
        env!("CARGO_BIN_EXE_fake-tart"),
        &kubeconfig,
        &node,
    )
    .args(cp.kubelet_api_args(port))
    .args([
        "--identity".to_string(),
        "node".into(),
        "--bootstrap-kubeconfig".into(),
        boot.display().to_string(),
        "--api-timeout".into(),
        "5s".into(),
        "--lease-duration".into(),
        "12s".into(),
        "--lease-renew-interval".into(),
        "3s".into(),
    ]);
    let agent = Agent::start(opts).await.expect("agent");

    // It becomes system:node:<node>: the kubeconfig it wrote (0600) names a certificate for
    // that user, and the Node it registered (which NodeRestriction lets only that user
    // create) turns Ready.
    let pem = wait_for(WAIT, || async {
        let p = pair_file(&kubeconfig)?;
        certificate_facts(&p).await.map(|_| p)
    })
    .await
    .unwrap_or_else(|e| panic!("no kubeconfig written: {e}\n{}", agent.log_tail(60)));
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&kubeconfig), 0o600);
    assert_eq!(mode(&pem), 0o600);
    let (subject, first_serial, first_end) = certificate_facts(&pem).await.unwrap();
    assert!(
        subject.contains(&format!("CN = system:node:{node}"))
            && subject.contains("O = system:nodes"),
        "{subject}"
    );
    let log = agent.log();
    assert!(
        log.contains("waiting for approval of CSR"),
        "{}",
        agent.log_tail(60)
    );
    assert!(!log.contains(&secret), "the token reached the log");
    let nodes: Api<Node> = Api::all(admin.clone());
    wait_for(WAIT, || async {
        let n = nodes.get_opt(&node).await.ok().flatten()?;
        (ready(&n).as_deref() == Some("True")).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("node never Ready: {e}\n{}", agent.log_tail(60)));
    let csrs: Api<CertificateSigningRequest> = Api::all(admin.clone());
    let requesters = || async {
        let mut v: Vec<(String, String)> = csrs
            .list(&Default::default())
            .await
            .map(|l| l.items)
            .unwrap_or_default()
            .into_iter()
            .filter(|c| c.name_any().starts_with(&format!("{node}.client-")))
            .map(|c| {
                let created = c
                    .metadata
                    .creation_timestamp
                    .clone()
                    .map(|t| t.0.to_string());
                (
                    created.unwrap_or_default(),
                    c.spec.username.unwrap_or_default(),
                )
            })
            .collect();
        v.sort();
        v
    };
    // The first request is the bootstrap token's (renewals may already follow: a 7-minute
    // certificate may be due at once).
    let first = requesters().await;
    assert_eq!(
        first.first().map(|r| r.1.clone()),
        Some(format!("system:bootstrap:{id}")),
        "{first:?}\n{}",
        agent.log_tail(60)
    );
    eprintln!(
        "first certificate: {subject}, serial {first_serial}, ends {first_end} (now {})",
        now_secs()
    );

    // A Pod runs on it.
    let ns = "default";
    let pods: Api<Pod> = Api::namespaced(admin.clone(), ns);
    let pod_name = unique("boot-vm");
    pods.create(&PostParams::default(), &vm_pod(&pod_name, ns, &node))
        .await
        .expect("create pod");
    let running = |p: &Pod| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running");
    wait_for(WAIT, || async {
        pods.get_opt(&pod_name).await.ok().flatten().filter(running)
    })
    .await
    .unwrap_or_else(|e| panic!("pod never Running: {e}\n{}", agent.log_tail(60)));

    // From now on the Node must stay Ready and the Pod Running, never restarted.
    let faults = Arc::new(Mutex::new(Vec::<String>::new()));
    let (stop_tx, mut stop_rx) = tokio::sync::watch::channel(false);
    let watcher = tokio::spawn({
        let (nodes, pods, node, pod_name, faults) = (
            nodes.clone(),
            pods.clone(),
            node.clone(),
            pod_name.clone(),
            faults.clone(),
        );
        async move {
            loop {
                if let Ok(n) = nodes.get(&node).await
                    && ready(&n).as_deref() != Some("True")
                {
                    faults
                        .lock()
                        .unwrap()
                        .push(format!("Node Ready={:?}", ready(&n)));
                }
                if let Ok(p) = pods.get(&pod_name).await {
                    let restarts: i32 = p
                        .status
                        .as_ref()
                        .and_then(|s| s.container_statuses.as_ref())
                        .map_or(0, |c| c.iter().map(|c| c.restart_count).sum());
                    if !running(&p) || restarts > 0 {
                        faults.lock().unwrap().push(format!(
                            "Pod phase {:?}, restarts {restarts}",
                            p.status.and_then(|s| s.phase)
                        ));
                    }
                }
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_secs(1)) => {}
                    _ = stop_rx.changed() => return,
                }
            }
        }
    });

    // Two renewals: the pair file holds a third certificate.
    let mut serials = vec![first_serial];
    let mut ends = vec![first_end];
    for round in 1..=2 {
        let (serial, end) = wait_for(Duration::from_secs(240), || async {
            let (_, serial, end) = certificate_facts(&pem).await?;
            (!serials.contains(&serial)).then_some((serial, end))
        })
        .await
        .unwrap_or_else(|e| panic!("renewal {round} never came: {e}\n{}", agent.log_tail(60)));
        eprintln!(
            "renewal {round}: serial {serial}, ends {end} (now {})",
            now_secs()
        );
        serials.push(serial);
        ends.push(end);
    }
    // Past the end of the first two certificates (and the node monitor's 16 s grace), the
    // running agent still renews its Lease: its clients present the renewed certificates.
    let past = ends[1] + 25;
    let left = u64::try_from(past - now_secs()).unwrap_or(0);
    let waited = wait_for(Duration::from_secs(left + 60), || async {
        (now_secs() >= past).then_some(())
    })
    .await;
    assert!(waited.is_ok());
    let _ = stop_tx.send(true);
    let _ = watcher.await;
    let faults = faults.lock().unwrap().clone();
    assert!(
        faults.is_empty(),
        "the Node left Ready or the Pod stopped during the renewals: {:?}\n{}",
        &faults[..faults.len().min(10)],
        agent.log_tail(80)
    );
    let n = nodes.get(&node).await.expect("node");
    assert_eq!(ready(&n).as_deref(), Some("True"));

    // The renewals were the node's own requests, made with its current certificate.
    let all = requesters().await;
    assert!(all.len() >= 3, "{all:?}");
    for (_, user) in &all[1..] {
        assert_eq!(user, &format!("system:node:{node}"), "{all:?}");
    }
    let log = agent.log();
    // No request went out with a lapsed certificate: the API server never answered 401.
    assert!(
        !log.contains("Unauthorized"),
        "a request was refused as Unauthorized:\n{}",
        log.lines()
            .filter(|l| l.contains("Unauthorized"))
            .take(5)
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(
        log.matches("renewed client certificate in use").count() >= 2,
        "{}",
        agent.log_tail(60)
    );
    // The expiry metric follows the certificate in use.
    let (_, _, end_now) = certificate_facts(&pem).await.unwrap();
    let metric = agent
        .metric("tart_kubelet_client_certificate_expiration_timestamp_seconds")
        .await
        .expect("metric");
    // (A renewal may land between the two reads: then the metric names the newer one.)
    let metric = metric as i64;
    assert!(
        metric >= end_now && metric > ends[1],
        "{metric} vs {end_now}"
    );
}
