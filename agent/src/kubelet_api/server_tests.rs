//! The server over real TLS, with the test PKI in `testdata/` and a mocked reviewer.

use std::{
    path::{Path, PathBuf},
    sync::Mutex,
};

use futures::{FutureExt, future::BoxFuture};
use rustls::{
    ClientConfig, RootCertStore,
    pki_types::{CertificateDer, PrivateKeyDer, ServerName, pem::PemObject},
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_rustls::TlsConnector;

use super::{
    review::{AccessRequest, ReviewError, UserInfo},
    *,
};
use crate::config::{ClientCa, HostDefaults, RunArgs};

pub(super) const DEADLINE: Duration = Duration::from_secs(10);

fn testdata(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src/kubelet_api/testdata")
        .join(name)
}

/// Allows everyone; remembers the last access review.
#[derive(Default)]
pub(super) struct Recorder {
    last: Mutex<Option<AccessRequest>>,
}

impl Reviewer for Recorder {
    fn review_token(&self, _: String) -> BoxFuture<'static, Result<Option<UserInfo>, ReviewError>> {
        async { Ok(None) }.boxed()
    }

    fn review_access(&self, req: AccessRequest) -> BoxFuture<'static, Result<bool, ReviewError>> {
        *self.last.lock().unwrap() = Some(req);
        async { Ok(true) }.boxed()
    }
}

/// No Pods, no logs, no exec: the routes answer from an empty node.
fn services(reviewer: Arc<Recorder>) -> Services {
    Services {
        reviewer,
        pods: Arc::new(Vec::new),
        logs: None,
        exec: None,
        exec_metrics: Default::default(),
        limit_metrics: Default::default(),
        stats: None,
        scrape: None,
    }
}

async fn start_server(cert: CertFiles, reviewer: Arc<Recorder>) -> (Running, watch::Sender<bool>) {
    start_limited(cert, reviewer, Limits::default(), LimitMetrics::default()).await
}

pub(super) async fn start_limited(
    cert: CertFiles,
    reviewer: Arc<Recorder>,
    limits: Limits,
    metrics: LimitMetrics,
) -> (Running, watch::Sender<bool>) {
    let ca = ClientCa::File(testdata("ca.crt"));
    start_trusting(cert, reviewer, limits, metrics, ca).await
}

/// A server whose client CAs are `client_ca`.
async fn start_trusting(
    cert: CertFiles,
    reviewer: Arc<Recorder>,
    limits: Limits,
    metrics: LimitMetrics,
    client_ca: ClientCa,
) -> (Running, watch::Sender<bool>) {
    let (tx, rx) = watch::channel(false);
    let settings = Settings {
        addr: "127.0.0.1:0".parse().unwrap(),
        cert,
        client_ca: Some(client_ca),
        node_name: "mac-1".into(),
        reload_check: Duration::from_millis(20),
        limits,
    };
    let services = Services {
        limit_metrics: metrics,
        ..services(reviewer)
    };
    let running = start(settings, services, rx).await.unwrap();
    (running, tx)
}

pub(super) fn client(identity: Option<&str>) -> TlsConnector {
    let mut roots = RootCertStore::empty();
    let ca = CertificateDer::pem_file_iter(testdata("ca.crt")).unwrap();
    roots.add_parsable_certificates(ca.map(Result::unwrap));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let b = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let cfg = match identity {
        None => b.with_no_client_auth(),
        Some(name) => {
            let certs = CertificateDer::pem_file_iter(testdata(&format!("{name}.crt")))
                .unwrap()
                .map(Result::unwrap)
                .collect();
            let key = PrivateKeyDer::from_pem_file(testdata(&format!("{name}.key"))).unwrap();
            b.with_client_auth_cert(certs, key).unwrap()
        }
    };
    TlsConnector::from(Arc::new(cfg))
}

/// `GET path` over TLS: the status and the CN of the certificate the server presented.
pub(super) async fn get(
    addr: SocketAddr,
    identity: Option<&str>,
    path: &str,
) -> std::io::Result<(u16, String)> {
    let run = async {
        let tcp = tokio::net::TcpStream::connect(addr).await?;
        let name = ServerName::try_from("localhost").unwrap();
        let mut tls = client(identity).connect(name, tcp).await?;
        let served = tls.get_ref().1.peer_certificates().unwrap()[0].clone();
        let cn = x509::subject(&served).unwrap().common_name;
        let req = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
        tls.write_all(req.as_bytes()).await?;
        let mut out = Vec::new();
        tls.read_to_end(&mut out).await?;
        let text = String::from_utf8_lossy(&out);
        let status = text
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        Ok((status, cn))
    };
    tokio::time::timeout(DEADLINE, run).await?
}

pub(super) fn served_files() -> CertFiles {
    CertFiles {
        cert: testdata("serving.crt"),
        key: testdata("serving.key"),
    }
}

#[tokio::test]
async fn without_credentials_the_answer_is_401() {
    let (s, _sd) = start_server(served_files(), Arc::default()).await;
    assert_eq!(get(s.addr, None, "/healthz").await.unwrap().0, 401);
}

#[tokio::test]
async fn a_client_certificate_is_the_user_cn_with_its_o_groups() {
    let reviewer = Arc::new(Recorder::default());
    let (s, _sd) = start_server(served_files(), reviewer.clone()).await;
    assert_eq!(
        get(s.addr, Some("client"), "/healthz").await.unwrap(),
        (200, "serving-a".into())
    );
    let req = reviewer.last.lock().unwrap().clone().unwrap();
    assert_eq!(req.user.name, "alice");
    assert_eq!(req.user.groups, ["devs", "ops", "system:authenticated"]);
    assert_eq!(req.node, "mac-1");
}

/// The default client CA: the kubeconfig's cluster CA, as DER certificates.
#[tokio::test]
async fn a_client_ca_from_the_kubeconfig_authenticates_certificates_it_signed() {
    let der = CertificateDer::pem_file_iter(testdata("ca.crt"))
        .unwrap()
        .map(|c| c.unwrap().to_vec())
        .collect();
    let (s, _sd) = start_trusting(
        served_files(),
        Arc::default(),
        Limits::default(),
        LimitMetrics::default(),
        ClientCa::Kubeconfig(der),
    )
    .await;
    assert_eq!(
        get(s.addr, Some("client"), "/healthz").await.unwrap().0,
        200
    );
    let r = get(s.addr, Some("stranger"), "/healthz").await;
    assert!(r.is_err() || r.as_ref().unwrap().0 == 0, "{r:?}");
}

#[tokio::test]
async fn a_certificate_from_another_ca_fails_the_handshake() {
    let (s, _sd) = start_server(served_files(), Arc::default()).await;
    let r = get(s.addr, Some("stranger"), "/healthz").await;
    assert!(r.is_err() || r.as_ref().unwrap().0 == 0, "{r:?}");
}

#[tokio::test]
async fn an_expired_or_not_yet_valid_client_certificate_fails_the_handshake() {
    let reviewer = Arc::new(Recorder::default());
    let (s, _sd) = start_trusting(
        served_files(),
        reviewer.clone(),
        Limits::default(),
        LimitMetrics::default(),
        ClientCa::File(testdata("ca-and-dated.crt")),
    )
    .await;
    // The same CA's certificate valid today gets through: the CA is trusted.
    assert_eq!(
        get(s.addr, Some("dated-current"), "/healthz")
            .await
            .unwrap()
            .0,
        200
    );
    assert_eq!(
        reviewer.last.lock().unwrap().clone().unwrap().user.name,
        "current"
    );
    for name in ["dated-expired", "dated-future"] {
        let r = get(s.addr, Some(name), "/healthz").await;
        assert!(r.is_err() || r.as_ref().unwrap().0 == 0, "{name}: {r:?}");
    }
}

#[tokio::test]
async fn a_replaced_certificate_is_served_without_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let files = CertFiles {
        cert: dir.path().join("tls.crt"),
        key: dir.path().join("tls.key"),
    };
    std::fs::copy(testdata("serving.crt"), &files.cert).unwrap();
    std::fs::copy(testdata("serving.key"), &files.key).unwrap();
    let (s, _sd) = start_server(files.clone(), Arc::default()).await;
    assert_eq!(get(s.addr, None, "/healthz").await.unwrap().1, "serving-a");
    // Write the new pair under other names, then rename: the watcher never sees half a pair
    // it could load.
    std::fs::copy(testdata("serving2.key"), dir.path().join("new.key")).unwrap();
    std::fs::copy(testdata("serving2.crt"), dir.path().join("new.crt")).unwrap();
    std::fs::rename(dir.path().join("new.key"), &files.key).unwrap();
    std::fs::rename(dir.path().join("new.crt"), &files.cert).unwrap();
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let cn = get(s.addr, None, "/healthz").await.unwrap().1;
        if cn == "serving-b" {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "still serving {cn}");
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn unusable_certificate_files_stop_the_start() {
    let files = CertFiles {
        cert: testdata("serving.crt"),
        key: testdata("serving2.key"),
    };
    let (_tx, rx) = watch::channel(false);
    let settings = Settings {
        addr: "127.0.0.1:0".parse().unwrap(),
        cert: files,
        client_ca: None,
        node_name: "mac-1".into(),
        reload_check: RELOAD_CHECK,
        limits: Limits::default(),
    };
    let r = start(settings, services(Arc::new(Recorder::default())), rx).await;
    assert!(
        matches!(r, Err(StartError::Tls(TlsError::BadKey { .. }))),
        "{r:?}"
    );
}

#[test]
fn without_certificate_files_the_certificate_is_requested_into_the_cert_dir() {
    let host = HostDefaults {
        hostname: "mac-1".into(),
        home: "/home/x".into(),
    };
    let cfg = Config::resolve(RunArgs::default(), &host).unwrap();
    assert_eq!(settings(&cfg, None), None);
    assert_eq!(cfg.kubelet_port, 10250);
    assert_eq!(cfg.cert_dir, Path::new("/home/x/.tart-kubelet/pki"));
    assert_eq!(listen(&cfg, None).addr.to_string(), "0.0.0.0:10250");
    let args = RunArgs {
        tls_cert_file: Some("/c.crt".into()),
        tls_private_key_file: Some("/c.key".into()),
        kubelet_port: Some(20250),
        ..RunArgs::default()
    };
    let s = settings(&Config::resolve(args, &host).unwrap(), None).unwrap();
    assert_eq!(s.addr.to_string(), "0.0.0.0:20250");
    let half = RunArgs {
        tls_cert_file: Some("/c.crt".into()),
        ..RunArgs::default()
    };
    assert!(Config::resolve(half, &host).is_err());
}
