//! The server's limits over real TLS: the handshake and header deadlines close a silent or
//! slow client, and at the connection cap an authenticated client still gets in, closing the
//! oldest unauthenticated connection.

use tokio::net::TcpStream;

use rustls::pki_types::ServerName;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::server_tests::{DEADLINE, client, get, served_files, start_limited};
use super::*;
use crate::kubelet_api::limits::Limit;

fn tight() -> Limits {
    Limits {
        handshake: Duration::from_millis(300),
        header: Duration::from_millis(300),
        max_connections: 3,
        ..Limits::default()
    }
}

/// Resolves when the server closed `tcp` (end of file or reset), within the deadline.
async fn closed_by_server(tcp: &mut TcpStream) -> bool {
    let mut buf = [0u8; 64];
    let read = async {
        loop {
            match tcp.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    };
    tokio::time::timeout(DEADLINE, read).await.is_ok()
}

#[tokio::test]
async fn a_client_that_never_finishes_its_handshake_is_closed_at_the_deadline() {
    let m = LimitMetrics::default();
    let (s, _sd) = start_limited(served_files(), Arc::default(), tight(), m.clone()).await;
    let mut tcp = TcpStream::connect(s.addr).await.unwrap();
    assert!(closed_by_server(&mut tcp).await);
    assert_eq!(m.count(Limit::Handshake), 1);
}

#[tokio::test]
async fn request_headers_sent_too_slowly_close_the_connection() {
    let m = LimitMetrics::default();
    let (s, _sd) = start_limited(served_files(), Arc::default(), tight(), m.clone()).await;
    let tcp = TcpStream::connect(s.addr).await.unwrap();
    let name = ServerName::try_from("localhost").unwrap();
    let mut tls = client(None).connect(name, tcp).await.unwrap();
    // Half a request line, then nothing: a slowloris.
    tls.write_all(b"GET /healthz HTT").await.unwrap();
    tls.flush().await.unwrap();
    let mut out = Vec::new();
    let read = tokio::time::timeout(DEADLINE, tls.read_to_end(&mut out)).await;
    assert!(read.is_ok(), "still open after the header deadline");
    let text = String::from_utf8_lossy(&out);
    assert!(!text.contains("200"), "{text}");
    let counted = tokio::time::timeout(DEADLINE, async {
        while m.count(Limit::Header) == 0 {
            tokio::task::yield_now().await;
        }
    })
    .await;
    assert!(counted.is_ok(), "header timeout not counted");
}

#[tokio::test]
async fn at_the_cap_an_authenticated_client_gets_in_and_the_oldest_idle_one_goes() {
    let m = LimitMetrics::default();
    let limits = Limits {
        handshake: Duration::from_secs(30),
        ..tight()
    };
    let (s, _sd) = start_limited(served_files(), Arc::default(), limits, m.clone()).await;
    // Three silent connections fill the cap.
    let mut idle = Vec::new();
    for _ in 0..3 {
        idle.push(TcpStream::connect(s.addr).await.unwrap());
    }
    // The client certificate's request is served all the same, again and again.
    for _ in 0..3 {
        assert_eq!(
            get(s.addr, Some("client"), "/healthz").await.unwrap().0,
            200
        );
    }
    // The oldest silent connection made room for the first of them.
    assert!(closed_by_server(&mut idle[0]).await);
    assert!(m.count(Limit::Connections) >= 1);
}
