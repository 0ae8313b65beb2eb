//! One probe attempt: the [`Checker`] seam the prober calls, and [`GuestChecker`], the real
//! one — `tart exec` into the guest ([`exec`]), HTTP ([`http`]) and TCP ([`tcp`]) from the Mac
//! to the guest's IP. Scheduling and thresholds are the prober's.

use std::{future::Future, net::Ipv4Addr, sync::Arc, time::Duration};

use tart::{Tart, VmName};

use super::model::Action;
use crate::lifecycle::handlers::{exec, http, outcome::Outcome, tcp};

/// Makes one probe attempt. Implementations bound the attempt by `timeout` themselves and leave
/// nothing behind (process, socket, task) when the returned future ends or is dropped.
pub(crate) trait Checker: Send + Sync + 'static {
    /// Run `action` once.
    fn check(&self, action: &Action, timeout: Duration) -> impl Future<Output = Outcome> + Send;
}

/// The real checks against one VM: `exec` through `tart exec`, `httpGet` and `tcpSocket` from
/// the Mac to `ip` (or the probe's own host).
pub(crate) struct GuestChecker<T: Tart> {
    tart: Arc<T>,
    vm: VmName,
    ip: Ipv4Addr,
    http: http::HttpClient,
}

impl<T: Tart> GuestChecker<T> {
    /// Checks against `vm`, whose guest has `ip` (the Pod IP).
    pub(crate) fn new(tart: Arc<T>, vm: VmName, ip: Ipv4Addr) -> Self {
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
mod tests;
