//! The connector against a rustls server on loopback, with the test PKI of
//! `kubelet_api/testdata` (its README says which CA signed what).

use std::{path::PathBuf, sync::Arc, time::Duration};

use base64::Engine as _;
use rustls::{
    RootCertStore, ServerConfig,
    pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject},
    server::WebPkiClientVerifier,
};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpListener,
    sync::mpsc,
    time::timeout,
};
use tokio_rustls::TlsAcceptor;

use super::{ApiTls, Error, Origin, Trust, certified_key, trust};

const VERSION: &str = r#"{"major":"1","minor":"20","gitVersion":"v1.20.2","gitCommit":"c","gitTreeState":"clean","buildDate":"2021-01-13T13:20:00Z","goVersion":"go1.15.5","compiler":"gc","platform":"linux/amd64"}"#;

fn testdata(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("src/kubelet_api/testdata")
        .join(name)
}

fn read(name: &str) -> Vec<u8> {
    std::fs::read(testdata(name)).unwrap()
}

fn certs(name: &str) -> Vec<CertificateDer<'static>> {
    CertificateDer::pem_file_iter(testdata(name))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// `test-client-ca`, which signed `serving.crt` and `client.crt`.
fn test_ca() -> Vec<u8> {
    certs("ca.crt")[0].to_vec()
}

/// `dated-ca`, which signed `dated-current.crt` and not the server's certificate.
fn dated_ca() -> Vec<u8> {
    certs("ca-and-dated.crt")[1].to_vec()
}

fn origin() -> Origin {
    Origin {
        kubeconfig: "/etc/tart-kubelet/kubeconfig".into(),
        cluster: "prod".into(),
    }
}

/// What the server saw of one request.
#[derive(Debug)]
struct Seen {
    /// The client certificate presented in the handshake.
    client_cert: Option<CertificateDer<'static>>,
    /// The request head.
    head: String,
}

/// The server side of one test connection.
type Tls = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;

/// An HTTPS server on loopback with `serving.crt` that asks for (and accepts no) client
/// certificate from either test CA and runs `serve` on each connection, with the certificate
/// its handshake presented and the channel its requests are reported on.
async fn listen<F, Fut>(serve: F) -> (u16, mpsc::UnboundedReceiver<Seen>)
where
    F: Fn(Tls, Option<CertificateDer<'static>>, mpsc::UnboundedSender<Seen>) -> Fut
        + Send
        + Sync
        + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let acceptor = acceptor();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = mpsc::unbounded_channel();
    let serve = Arc::new(serve);
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, tx, serve) = (acceptor.clone(), tx.clone(), serve.clone());
            tokio::spawn(async move {
                if let Some((tls, client_cert)) = accept(&acceptor, tcp).await {
                    serve(tls, client_cert, tx).await;
                }
            });
        }
    });
    (port, rx)
}

/// [`listen`] answering `/version` and closing each connection, so every request is a new
/// handshake. `answer: false` reads the request and never answers.
async fn server(answer: bool) -> (u16, mpsc::UnboundedReceiver<Seen>) {
    listen(move |mut tls, client_cert, tx| async move {
        let mut head = Vec::new();
        let mut buf = [0u8; 1024];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            match tls.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
        }
        let head = String::from_utf8_lossy(&head).into_owned();
        let _ = tx.send(Seen { client_cert, head });
        if !answer {
            std::future::pending::<()>().await;
        }
        let response = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
             connection: close\r\n\r\n{VERSION}",
            VERSION.len()
        );
        let _ = tls.write_all(response.as_bytes()).await;
        let _ = tls.shutdown().await;
    })
    .await
}

/// [`listen`] keeping each connection open for further requests (HTTP/1.1 keep-alive, as an
/// API server's); each request is reported with its connection's certificate.
async fn keep_alive_server() -> (u16, mpsc::UnboundedReceiver<Seen>) {
    listen(|mut tls, client_cert, tx| async move {
        let mut pending = Vec::new();
        let mut buf = [0u8; 1024];
        loop {
            while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                let head: Vec<u8> = pending.drain(..end + 4).collect();
                let head = String::from_utf8_lossy(&head).into_owned();
                let _ = tx.send(Seen {
                    client_cert: client_cert.clone(),
                    head,
                });
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{VERSION}",
                    VERSION.len()
                );
                if tls.write_all(response.as_bytes()).await.is_err() {
                    return;
                }
            }
            match tls.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => pending.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await
}

/// The TLS side of `tcp`, with the client certificate presented in the handshake.
async fn accept(
    acceptor: &TlsAcceptor,
    tcp: tokio::net::TcpStream,
) -> Option<(
    tokio_rustls::server::TlsStream<tokio::net::TcpStream>,
    Option<CertificateDer<'static>>,
)> {
    let tls = acceptor.accept(tcp).await.ok()?;
    let cert = tls
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|c| c.first().cloned());
    Some((tls, cert))
}

/// A TLS acceptor with `serving.crt` that asks for (and does not require) a client
/// certificate from either test CA.
fn acceptor() -> TlsAcceptor {
    let mut roots = RootCertStore::empty();
    for c in certs("ca-and-dated.crt") {
        roots.add(c).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .allow_unauthenticated()
        .build()
        .unwrap();
    let config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_client_cert_verifier(verifier)
        .with_single_cert(
            certs("serving.crt"),
            PrivateKeyDer::from_pem_file(testdata("serving.key")).unwrap(),
        )
        .unwrap();
    TlsAcceptor::from(Arc::new(config))
}

/// A configuration for the server on `port` trusting `ca`, with `client.crt` (CN=alice) as
/// its client certificate when `with_cert`.
fn config(port: u16, ca: Option<Vec<u8>>, with_cert: bool) -> kube::Config {
    let mut c = kube::Config::new(format!("https://127.0.0.1:{port}").parse().unwrap());
    c.root_cert = ca.map(|ca| vec![ca]);
    if with_cert {
        let b64 = |name| base64::engine::general_purpose::STANDARD.encode(read(name));
        c.auth_info.client_certificate_data = Some(b64("client.crt"));
        c.auth_info.client_key_data = Some(b64("client.key").into());
    }
    c
}

async fn version(client: &kube::Client) -> Result<(), kube::Error> {
    timeout(Duration::from_secs(10), client.apiserver_version())
        .await
        .expect("the request ends before the test's deadline")
        .map(drop)
}

#[test]
fn trust_follows_the_cluster_entry() {
    use Trust::{KubeconfigCa, SkipVerify};
    // (https, has CA, insecure-skip-tls-verify) -> trust, or the error's variant.
    let cases: [(bool, bool, bool, Result<Trust, &str>); 6] = [
        (true, true, false, Ok(KubeconfigCa)),
        (true, false, false, Err("NoCertificateAuthority")),
        (true, false, true, Ok(SkipVerify)),
        (true, true, true, Err("CaAndInsecure")),
        (false, false, false, Ok(KubeconfigCa)),
        (false, true, true, Err("CaAndInsecure")),
    ];
    for (https, ca, insecure, want) in cases {
        let got = trust(https, ca, insecure, &origin()).map_err(|e| match e {
            Error::NoCertificateAuthority(_) => "NoCertificateAuthority",
            Error::CaAndInsecure(_) => "CaAndInsecure",
            other => panic!("unexpected {other:?}"),
        });
        assert_eq!(got, want, "https={https} ca={ca} insecure={insecure}");
    }
}

#[test]
fn an_https_server_without_a_ca_names_the_kubeconfig_and_the_cluster() {
    let err = ApiTls::new(&config(443, None, false), origin())
        .err()
        .expect("no client without a CA");
    let text = err.to_string();
    assert!(text.contains("/etc/tart-kubelet/kubeconfig"), "{text}");
    assert!(text.contains("\"prod\""), "{text}");
    assert!(text.contains("certificate-authority"), "{text}");
}

#[test]
fn a_certificate_without_its_key_is_refused() {
    let mut c = config(443, Some(test_ca()), true);
    c.auth_info.client_key_data = None;
    let err = ApiTls::new(&c, origin()).err().expect("half an identity");
    let chain = crate::errors::error_chain(&err);
    assert!(
        chain.contains("client-certificate is set but client-key is not"),
        "{chain}"
    );
}

#[tokio::test]
async fn the_kubeconfig_ca_is_trusted_and_the_client_certificate_presented() {
    let (port, mut seen) = server(true).await;
    let c = config(port, Some(test_ca()), true);
    let client = ApiTls::new(&c, origin()).unwrap().client(&c).unwrap();
    version(&client).await.unwrap();
    let got = seen.recv().await.unwrap();
    assert_eq!(got.client_cert, Some(certs("client.crt")[0].clone()));
    assert!(got.head.starts_with("GET /version"), "{}", got.head);
}

#[tokio::test]
async fn a_server_whose_certificate_another_ca_signed_is_refused() {
    let (port, mut seen) = server(true).await;
    let c = config(port, Some(dated_ca()), true);
    let client = ApiTls::new(&c, origin()).unwrap().client(&c).unwrap();
    let err = version(&client).await.expect_err("untrusted server");
    let chain = crate::errors::error_chain(&err);
    assert!(chain.contains("UnknownIssuer"), "{chain}");
    assert!(seen.try_recv().is_err(), "no request was sent");
}

#[tokio::test]
async fn insecure_skip_tls_verify_accepts_a_server_of_any_ca() {
    let (port, mut seen) = server(true).await;
    let mut c = config(port, None, false);
    c.accept_invalid_certs = true;
    let client = ApiTls::new(&c, origin()).unwrap().client(&c).unwrap();
    version(&client).await.unwrap();
    assert!(seen.recv().await.unwrap().client_cert.is_none());
}

#[tokio::test]
async fn a_replaced_identity_is_presented_on_the_next_connection() {
    let (port, mut seen) = server(true).await;
    let c = config(port, Some(test_ca()), true);
    let tls = ApiTls::new(&c, origin()).unwrap();
    let client = tls.client(&c).unwrap();
    version(&client).await.unwrap();
    assert_eq!(
        seen.recv().await.unwrap().client_cert,
        Some(certs("client.crt")[0].clone())
    );

    let renewed = certified_key(&read("dated-current.crt"), &read("dated-current.key")).unwrap();
    tls.identity().replace(renewed);
    version(&client).await.unwrap();
    assert_eq!(
        seen.recv().await.unwrap().client_cert,
        Some(certs("dated-current.crt")[0].clone()),
        "the same client presents the new certificate"
    );
}

#[tokio::test]
async fn a_token_goes_through_kube_s_auth_layer() {
    let (port, mut seen) = server(true).await;
    let mut c = config(port, Some(test_ca()), false);
    c.auth_info.token = Some("t0ken".to_owned().into());
    let client = ApiTls::new(&c, origin()).unwrap().client(&c).unwrap();
    version(&client).await.unwrap();
    let head = seen.recv().await.unwrap().head.to_ascii_lowercase();
    assert!(head.contains("authorization: bearer t0ken"), "{head}");
}

#[tokio::test]
async fn the_read_timeout_ends_a_request_the_server_never_answers() {
    let (port, mut seen) = server(false).await;
    let mut c = config(port, Some(test_ca()), false);
    c.read_timeout = Some(Duration::from_millis(300));
    let client = ApiTls::new(&c, origin()).unwrap().client(&c).unwrap();
    let err = version(&client).await.expect_err("no answer");
    let chain = crate::errors::error_chain(&err);
    assert!(chain.to_lowercase().contains("timed out"), "{chain}");
    assert!(
        seen.recv().await.is_some(),
        "the request reached the server"
    );
}

#[tokio::test]
async fn a_replaced_identity_closes_the_kept_alive_connections_made_before_it() {
    let (port, mut seen) = keep_alive_server().await;
    let c = config(port, Some(test_ca()), true);
    let tls = ApiTls::new(&c, origin()).unwrap();
    let client = tls.client(&c).unwrap();
    let first = certs("client.crt")[0].clone();
    version(&client).await.unwrap();
    version(&client).await.unwrap();
    for _ in 0..2 {
        assert_eq!(seen.recv().await.unwrap().client_cert, Some(first.clone()));
    }

    let renewed = certified_key(&read("dated-current.crt"), &read("dated-current.key")).unwrap();
    tls.identity().replace(renewed);
    // The connection kept from before may fail one request as it closes; the next one is
    // made on a new connection with the new certificate.
    let mut tries = 0;
    while version(&client).await.is_err() {
        tries += 1;
        assert!(tries < 3, "requests keep failing after the replacement");
    }
    assert_eq!(
        seen.recv().await.unwrap().client_cert,
        Some(certs("dated-current.crt")[0].clone()),
        "the request after the replacement went on a connection made with the old certificate"
    );
}
