//! The request's name, the names its certificate carries, and the Node events and times the
//! bootstrap and `doctor` report. Pure.

use std::{net::IpAddr, time::SystemTime};

use super::request::Sans;
use crate::node::events::NodeEvent;

/// The name of the request made with the key of fingerprint `fingerprint`: the same key asks
/// under the same name, so an agent restarted while waiting finds its request again.
pub(super) fn request_name(node: &str, fingerprint: &str) -> String {
    crate::api::event_name(node, &format!("serving-{fingerprint}"))
}

/// The names the Node advertises and the certificate must carry: its `InternalIP` and its
/// name, which is also its `kubernetes.io/hostname` label.
pub(crate) fn sans_for(node: &str, internal_ip: IpAddr) -> Sans {
    Sans {
        dns: vec![node.to_owned()],
        ips: vec![internal_ip],
    }
}

/// Node event reasons of the certificate's progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reason {
    /// A request waits for approval.
    Pending,
    /// The certificate was issued.
    Issued,
    /// An approver denied the request.
    Denied,
    /// The signer failed the request.
    Failed,
}

impl Reason {
    /// Event reason.
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "ServingCertificatePending",
            Self::Issued => "ServingCertificateIssued",
            Self::Denied => "ServingCertificateDenied",
            Self::Failed => "ServingCertificateFailed",
        }
    }
}

/// PURE: the Node event for `reason` about request `csr`.
pub(super) fn event(reason: Reason, csr: &str, detail: &str) -> NodeEvent {
    let (warning, message) = match reason {
        Reason::Pending => (
            true,
            format!(
                "certificate signing request {csr} for the kubelet serving certificate is pending approval; approve it with: kubectl certificate approve {csr}"
            ),
        ),
        Reason::Issued => (
            false,
            format!(
                "certificate signing request {csr} is issued; kubelet serving certificate valid until {detail}"
            ),
        ),
        Reason::Denied => (
            true,
            format!(
                "certificate signing request {csr} was denied ({detail}); requesting again with a new key"
            ),
        ),
        Reason::Failed => (
            true,
            format!(
                "certificate signing request {csr} failed ({detail}); requesting again with a new key"
            ),
        ),
    };
    NodeEvent {
        warning,
        reason: reason.as_str(),
        message,
    }
}

/// `t` as RFC 3339.
pub(crate) fn rfc3339(t: SystemTime) -> String {
    k8s_openapi::jiff::Timestamp::try_from(t)
        .map(|ts| ts.to_string())
        .unwrap_or_else(|_| "?".into())
}

#[cfg(test)]
mod tests;
