//! The HTTP probe against tiny servers on 127.0.0.1 that answer each request with a scripted
//! raw response (or never), and record the request heads they saw.

use std::{
    net::Ipv4Addr,
    path::Path,
    sync::{Arc, Mutex},
    time::Duration,
};

use rustls::{
    ServerConfig,
    pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject},
};
use tokio::{
    io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt},
    net::TcpListener,
};
use tokio_rustls::TlsAcceptor;

use super::*;
use crate::lifecycle::handlers::url::USER_AGENT;

const LOCAL: Ipv4Addr = Ipv4Addr::LOCALHOST;
const T: Duration = Duration::from_secs(5);

/// What the server does with one request.
#[derive(Clone)]
enum Reply {
    /// Write this response and close.
    Raw(String),
    /// Never answer.
    Hang,
    /// Write this (a head promising more body than follows) and keep the connection open.
    Stall(String),
}

fn ok(body: &str) -> Reply {
    Reply::Raw(format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ))
}

fn status(code: u16) -> Reply {
    Reply::Raw(format!(
        "HTTP/1.1 {code} X\r\nContent-Length: 4\r\nConnection: close\r\n\r\nbody"
    ))
}

fn redirect(location: &str) -> Reply {
    Reply::Raw(format!(
        "HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 5\r\nConnection: close\r\n\r\nmoved"
    ))
}

struct Server {
    port: u16,
    heads: Arc<Mutex<Vec<String>>>,
}

impl Server {
    fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }
}

/// A server on 127.0.0.1 answering each request head with `respond(head)`; with `tls`, over
/// TLS with a certificate no client trusts.
async fn serve(tls: bool, respond: impl Fn(&str) -> Reply + Send + Sync + 'static) -> Server {
    let listener = TcpListener::bind((LOCAL, 0)).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let heads = Arc::new(Mutex::new(Vec::new()));
    let respond = Arc::new(respond);
    let acceptor = tls.then(acceptor);
    let seen = heads.clone();
    tokio::spawn(async move {
        loop {
            let (tcp, _) = listener.accept().await.unwrap();
            let (respond, seen, acceptor) = (respond.clone(), seen.clone(), acceptor.clone());
            tokio::spawn(async move {
                match acceptor {
                    None => answer(tcp, &*respond, &seen).await,
                    Some(a) => {
                        if let Ok(s) = a.accept(tcp).await {
                            answer(s, &*respond, &seen).await;
                        }
                    }
                }
            });
        }
    });
    Server { port, heads }
}

async fn answer<S: AsyncRead + AsyncWrite + Unpin>(
    mut s: S,
    respond: &(dyn Fn(&str) -> Reply + Send + Sync),
    seen: &Mutex<Vec<String>>,
) {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.ends_with(b"\r\n\r\n") {
        match s.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    seen.lock().unwrap().push(head.clone());
    match respond(&head) {
        Reply::Raw(r) => {
            let _ = s.write_all(r.as_bytes()).await;
            let _ = s.shutdown().await;
        }
        Reply::Hang => std::future::pending().await,
        Reply::Stall(r) => {
            let _ = s.write_all(r.as_bytes()).await;
            let _ = s.flush().await;
            std::future::pending().await
        }
    }
}

fn acceptor() -> TlsAcceptor {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/kubelet_api/testdata");
    let certs = CertificateDer::pem_file_iter(dir.join("serving.crt"))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let key = PrivateKeyDer::from_pem_file(dir.join("serving.key")).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let cfg = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    TlsAcceptor::from(Arc::new(cfg))
}

fn get(port: u16, path: &str) -> HttpGet {
    HttpGet {
        scheme: Scheme::Http,
        host: None,
        port,
        path: path.into(),
        headers: vec![],
    }
}

fn url(port: u16, path: &str) -> String {
    format!("http://127.0.0.1:{port}{path}")
}

async fn probe(g: &HttpGet, timeout: Duration) -> Outcome {
    HttpClient::new().check(g, LOCAL, timeout).await
}

#[tokio::test]
async fn a_healthy_endpoint_passes_and_sees_kubelets_request() {
    let s = serve(false, |_| ok("fine")).await;
    let mut g = get(s.port, "/healthz?verbose=1");
    g.headers = vec![("X-Probe".into(), "1".into())];
    assert_eq!(probe(&g, T).await, Outcome::Success);
    let heads = s.heads();
    assert_eq!(heads.len(), 1);
    let head = &heads[0];
    assert!(
        head.starts_with("GET /healthz?verbose=1 HTTP/1.1\r\n"),
        "{head}"
    );
    for line in [
        format!("Host: 127.0.0.1:{}", s.port),
        format!("User-Agent: {USER_AGENT}"),
        "Accept: */*".to_owned(),
        "Connection: close".to_owned(),
        "X-Probe: 1".to_owned(),
    ] {
        assert!(head.contains(&format!("{line}\r\n")), "{line} in {head}");
    }
    assert!(!head.to_lowercase().contains("accept-encoding"), "{head}");
}

#[tokio::test]
async fn a_host_header_names_the_virtual_host() {
    let s = serve(false, |_| ok("")).await;
    let mut g = get(s.port, "/");
    g.headers = vec![("Host".into(), "app.local".into())];
    assert_eq!(probe(&g, T).await, Outcome::Success);
    assert!(
        s.heads()[0].contains("Host: app.local\r\n"),
        "{:?}",
        s.heads()
    );
}

#[tokio::test]
async fn a_server_error_fails_with_its_status_code_and_not_its_body() {
    let s = serve(false, |_| status(500)).await;
    assert_eq!(
        probe(&get(s.port, "/healthz"), T).await,
        Outcome::Failure("HTTP probe failed with statuscode: 500".into())
    );
    let s = serve(false, |_| status(404)).await;
    assert_eq!(
        probe(&get(s.port, "/"), T).await,
        Outcome::Failure("HTTP probe failed with statuscode: 404".into())
    );
}

#[tokio::test]
async fn a_hanging_server_fails_at_the_timeout() {
    let s = serve(false, |_| Reply::Hang).await;
    let timeout = Duration::from_millis(300);
    let started = std::time::Instant::now();
    let got = probe(&get(s.port, "/healthz"), timeout).await;
    assert_eq!(
        got,
        Outcome::Failure(format!(
            "Get {:?}: context deadline exceeded (Client.Timeout exceeded while awaiting headers)",
            url(s.port, "/healthz")
        ))
    );
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn a_body_that_never_ends_is_a_prober_error() {
    let head = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort";
    let s = serve(false, move |_| Reply::Stall(head.into())).await;
    let got = probe(&get(s.port, "/"), Duration::from_millis(300)).await;
    assert_eq!(
        got,
        Outcome::Error(
            "context deadline exceeded (Client.Timeout or context cancellation while reading body)"
                .into()
        )
    );
}

#[tokio::test]
async fn a_refused_connection_fails_with_gos_text() {
    let port = TcpListener::bind((LOCAL, 0))
        .await
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    assert_eq!(
        probe(&get(port, "/healthz"), T).await,
        Outcome::Failure(format!(
            "Get {:?}: dial tcp 127.0.0.1:{port}: connect: connection refused",
            url(port, "/healthz")
        ))
    );
}

#[tokio::test]
async fn a_large_body_is_read_only_in_part() {
    let big = "x".repeat(4 << 20);
    let s = serve(false, move |_| ok(&big)).await;
    assert_eq!(probe(&get(s.port, "/"), T).await, Outcome::Success);
}

#[tokio::test]
async fn a_redirect_to_the_same_host_is_followed() {
    let s = serve(false, |head| {
        if head.starts_with("GET /old ") {
            redirect("/new")
        } else {
            status(503)
        }
    })
    .await;
    assert_eq!(
        probe(&get(s.port, "/old"), T).await,
        Outcome::Failure("HTTP probe failed with statuscode: 503".into())
    );
    let heads = s.heads();
    assert_eq!(heads.len(), 2);
    assert!(heads[1].starts_with("GET /new HTTP/1.1\r\n"), "{heads:?}");
}

#[tokio::test]
async fn a_redirect_to_another_host_succeeds_with_a_warning() {
    let s = serve(false, |_| redirect("http://localhost/elsewhere")).await;
    assert_eq!(
        probe(&get(s.port, "/"), T).await,
        Outcome::Warning("Probe terminated redirects, Response body: moved".into())
    );
    assert_eq!(s.heads().len(), 1, "not followed");
}

#[tokio::test]
async fn an_eleventh_redirect_fails() {
    let s = serve(false, |_| redirect("/again")).await;
    assert_eq!(
        probe(&get(s.port, "/"), T).await,
        Outcome::Failure(format!(
            "Get {:?}: stopped after 10 redirects",
            url(s.port, "/again")
        ))
    );
    assert_eq!(s.heads().len(), 11);
}

#[tokio::test]
async fn https_does_not_check_the_certificate() {
    let s = serve(true, |_| ok("secure")).await;
    let mut g = get(s.port, "/healthz");
    g.scheme = Scheme::Https;
    assert_eq!(probe(&g, T).await, Outcome::Success);
    assert_eq!(s.heads().len(), 1);
}

#[tokio::test]
async fn plain_http_to_a_tls_port_is_a_failure() {
    let s = serve(true, |_| ok("")).await;
    let got = probe(&get(s.port, "/"), Duration::from_secs(2)).await;
    assert!(matches!(got, Outcome::Failure(_)), "{got:?}");
}

#[tokio::test]
async fn the_probes_host_replaces_the_pod_ip() {
    let s = serve(false, |_| ok("")).await;
    let mut g = get(s.port, "/");
    g.host = Some("127.0.0.1".into());
    // The Pod IP is in TEST-NET-1, where nothing answers: only the probe's host can pass.
    assert_eq!(
        HttpClient::new()
            .check(&g, Ipv4Addr::new(192, 0, 2, 1), T)
            .await,
        Outcome::Success
    );
}
