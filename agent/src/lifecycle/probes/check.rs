//! One probe attempt: the [`Checker`] seam the prober calls, and [`GuestChecker`], the real
//! one — `tart exec` into the guest ([`exec`]), HTTP ([`http`]) and TCP ([`tcp`]) from the Mac
//! to the guest's IP. Scheduling and thresholds are the prober's.

use std::{future::Future, net::Ipv4Addr, sync::Arc, time::Duration};

use tart::{Tart, VmName};

use super::model::Action;
use crate::lifecycle::handlers::{exec, http, outcome::Outcome, tcp};

/// Makes one probe attempt. Implementations bound the attempt by `timeout` themselves and leave
/// nothing behind (process, socket, task) when the returned future ends or is dropped.
pub trait Checker: Send + Sync + 'static {
    /// Run `action` once.
    fn check(&self, action: &Action, timeout: Duration) -> impl Future<Output = Outcome> + Send;
}

/// The real checks against one VM: `exec` through `tart exec`, `httpGet` and `tcpSocket` from
/// the Mac to `ip` (or the probe's own host).
pub struct GuestChecker<T: Tart> {
    tart: Arc<T>,
    vm: VmName,
    ip: Ipv4Addr,
    http: http::HttpClient,
}

impl<T: Tart> GuestChecker<T> {
    /// Checks against `vm`, whose guest has `ip` (the Pod IP).
    pub fn new(tart: Arc<T>, vm: VmName, ip: Ipv4Addr) -> Self {
        Self {
            tart,
            vm,
            ip,
            http: http::HttpClient::new(),
        }
    }
}

impl<T: Tart> Checker for GuestChecker<T> {
    async fn check(&self, action: &Action, timeout: Duration) -> Outcome {
        match action {
            Action::Exec { command } => exec::check(&*self.tart, &self.vm, command, timeout).await,
            Action::HttpGet(get) => self.http.check(get, self.ip, timeout).await,
            Action::TcpSocket { host, port } => {
                let host = host.clone().unwrap_or_else(|| self.ip.to_string());
                tcp::check(&host, *port, timeout).await
            }
        }
    }
}

#[cfg(test)]
mod tests {
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
}
