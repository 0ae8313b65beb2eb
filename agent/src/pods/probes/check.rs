//! One probe attempt: its [`Outcome`], the [`Checker`] seam the prober calls, and
//! [`GuestChecker`], the real one — `tart exec` into the guest ([`exec`](super::exec)), HTTP
//! ([`http`](super::http)) and TCP ([`tcp`](super::tcp)) from the Mac to the guest's IP.
//! Scheduling and thresholds are the prober's.

use std::{future::Future, net::Ipv4Addr, sync::Arc, time::Duration};

use tart::{Tart, VmName};

use super::{exec, http, model::Action, tcp};

/// How one attempt ended, with kubelet's text for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The check passed.
    Success,
    /// The check passed, with a remark worth an event (an HTTP redirect to another host that
    /// was not followed: kubelet's `ProbeWarning`).
    Warning(String),
    /// The check failed: counts towards `failureThreshold`.
    Failure(String),
    /// The check could not be made (VM not running, `tart` missing): thrown away, counted
    /// neither way, but reported.
    Error(String),
}

/// The closed result of an attempt, for metric labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProbeResult {
    /// Success or warning.
    Success,
    /// Failure.
    Failure,
    /// The attempt could not be made.
    Error,
}

impl ProbeResult {
    /// Every result, for pre-creating metric series.
    pub const ALL: [ProbeResult; 3] = [Self::Success, Self::Failure, Self::Error];

    /// Metric label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Failure => "failure",
            Self::Error => "error",
        }
    }
}

impl Outcome {
    /// The closed result (a warning is a success, as kubelet counts it).
    pub fn result(&self) -> ProbeResult {
        match self {
            Self::Success | Self::Warning(_) => ProbeResult::Success,
            Self::Failure(_) => ProbeResult::Failure,
            Self::Error(_) => ProbeResult::Error,
        }
    }
}

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
