use tart::testing::MemTart;
use tokio::net::TcpListener;

use super::*;
use crate::lifecycle::handlers::model::{HttpGet, Scheme};

const T: Duration = Duration::from_secs(2);

/// A checker for a VM that does not run, whose guest is 127.0.0.1.
fn checker() -> (GuestChecker<MemTart>, Arc<MemTart>) {
    let tart = Arc::new(MemTart::new().with_vm("tk-vm"));
    let vm = VmName::new("tk-vm").unwrap();
    (
        GuestChecker::new(tart.clone(), vm, Ipv4Addr::LOCALHOST),
        tart,
    )
}

#[tokio::test]
async fn network_probes_go_to_the_guest_ip_unless_they_name_a_host() {
    let (c, _) = checker();
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let tcp = Action::TcpSocket { host: None, port };
    assert_eq!(c.check(&tcp, T).await, Outcome::Success);
    drop(l);
    let elsewhere = Action::TcpSocket {
        host: Some("127.0.0.1".into()),
        port,
    };
    assert_eq!(
        c.check(&elsewhere, T).await,
        Outcome::Failure(format!(
            "dial tcp 127.0.0.1:{port}: connect: connection refused"
        ))
    );
    let http = Action::HttpGet(HttpGet {
        scheme: Scheme::Http,
        host: None,
        port,
        path: "/healthz".into(),
        headers: vec![],
    });
    assert!(
        matches!(c.check(&http, T).await, Outcome::Failure(m) if m.starts_with("Get \"http://127.0.0.1:")),
    );
}

#[tokio::test]
async fn exec_probes_go_to_the_vm_through_tart() {
    let (c, tart) = checker();
    let exec = Action::Exec {
        command: vec!["true".into()],
    };
    let got = c.check(&exec, T).await;
    assert!(
        matches!(got, Outcome::Error(_)),
        "the VM is not running: {got:?}"
    );
    assert_eq!(tart.calls_of(tart::Op::Exec), ["tk-vm"]);
}
