//! Doctor's verdict (pure) on the client certificate the agent authenticates with, whoever
//! made it: its expiry, and whether anything renews it (the TLS bootstrap's renewal runs only
//! with `--bootstrap-kubeconfig`).

use std::time::SystemTime;

use super::checks::{Check, Status};
use crate::{
    credentials::lifetime::{self, Standing, Validity},
    kubelet_api::csr::rfc3339,
};

/// What `doctor` found about the kubeconfig's client certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Found {
    /// The kubeconfig authenticates otherwise (a token, an exec plugin).
    NoCertificate,
    /// `--kubeconfig` does not exist yet.
    NoKubeconfig,
    /// The certificate's validity.
    Certificate(Validity),
    /// It cannot be read: why.
    Unreadable(String),
}

/// Verdict on the client certificate at `now`; `bootstrap` says whether
/// `--bootstrap-kubeconfig` is set (then the agent bootstraps and renews it).
pub(crate) fn client_certificate_check(
    node: &str,
    found: &Found,
    bootstrap: bool,
    now: SystemTime,
) -> Check {
    const NAME: &str = "client-certificate";
    let replace = format!(
        "issue a new certificate for CN=system:node:{node}, O=system:nodes, or set --bootstrap-kubeconfig so the agent requests and renews its own (docs/node.md, TLS bootstrap)"
    );
    let v = match found {
        Found::NoCertificate => {
            return Check::new(
                NAME,
                Status::Skipped,
                "the kubeconfig authenticates without a client certificate",
            );
        }
        Found::NoKubeconfig if bootstrap => {
            return Check::new(
                NAME,
                Status::Ok,
                "no kubeconfig yet: the agent requests a client certificate with --bootstrap-kubeconfig when it starts",
            );
        }
        Found::NoKubeconfig => {
            return Check::new(NAME, Status::Fail, "the kubeconfig does not exist").fix(replace);
        }
        Found::Unreadable(e) => {
            return Check::new(NAME, Status::Fail, format!("cannot read it: {e}")).fix(replace);
        }
        Found::Certificate(v) => *v,
    };
    let until = rfc3339(v.not_after);
    match (lifetime::standing(Some(v), now), bootstrap) {
        (Standing::Expired, true) => Check::new(
            NAME,
            Status::Fail,
            format!("the client certificate expired at {until}"),
        )
        .fix("start the agent: it requests a new one with --bootstrap-kubeconfig (approve it if the cluster's approver does not)"),
        (Standing::Expired, false) => Check::new(
            NAME,
            Status::Fail,
            format!("the client certificate expired at {until}: the API server refuses it"),
        )
        .fix(replace),
        (Standing::NotYetValid, _) => Check::new(
            NAME,
            Status::Fail,
            format!(
                "the client certificate is not valid before {}",
                rfc3339(v.not_before)
            ),
        )
        .fix("check the Mac's clock (and the signer's)"),
        (Standing::Missing, _) => Check::new(NAME, Status::Fail, "no client certificate").fix(replace),
        (Standing::Valid, true) => Check::new(
            NAME,
            Status::Ok,
            format!("the client certificate is valid until {until}; the agent renews it at 70-90% of its life"),
        ),
        (Standing::Valid, false) if lifetime::in_renewal_window(v, now) => Check::new(
            NAME,
            Status::Warn,
            format!("the client certificate expires at {until} and nothing renews it (no --bootstrap-kubeconfig)"),
        )
        .fix(format!("replace it before {until}: {replace}")),
        (Standing::Valid, false) => Check::new(
            NAME,
            Status::Ok,
            format!("the client certificate is valid until {until} (not renewed by the agent: no --bootstrap-kubeconfig)"),
        ),
    }
}

#[cfg(test)]
mod tests;
