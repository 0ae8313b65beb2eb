use tokio::net::TcpListener;

use super::*;

const T: Duration = Duration::from_secs(2);

/// A port on 127.0.0.1 nothing listens on.
async fn closed_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    l.local_addr().unwrap().port()
}

#[tokio::test]
async fn a_listening_port_passes() {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    assert_eq!(check("127.0.0.1", port, T).await, Outcome::Success);
}

#[tokio::test]
async fn a_refused_connection_fails_with_gos_text() {
    let port = closed_port().await;
    assert_eq!(
        check("127.0.0.1", port, T).await,
        Outcome::Failure(format!(
            "dial tcp 127.0.0.1:{port}: connect: connection refused"
        ))
    );
}

#[tokio::test]
async fn an_unresolvable_name_fails_with_a_lookup_text() {
    let Outcome::Failure(text) = check("no-such-host.invalid", 80, T).await else {
        panic!("not a failure")
    };
    assert!(
        text.starts_with("dial tcp: lookup no-such-host.invalid: "),
        "{text}"
    );
}

#[test]
fn io_errors_read_as_go_prints_them() {
    let refused = io::Error::from_raw_os_error(libc_refused());
    assert_eq!(os_text(&refused), "connection refused");
    assert_eq!(
        os_text(&io::Error::from(io::ErrorKind::TimedOut)),
        "i/o timeout"
    );
    assert_eq!(
        DialError::timed_out("fe80::1", 80).to_string(),
        "dial tcp [fe80::1]:80: i/o timeout"
    );
}

/// ECONNREFUSED: 111 on Linux, 61 on macOS.
fn libc_refused() -> i32 {
    if cfg!(target_os = "macos") { 61 } else { 111 }
}
