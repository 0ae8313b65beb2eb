//! PURE: what a client certificate's validity means for the agent — may it be used
//! ([`standing`]), which credentials file the next request ([`renewal_credentials`]), and when
//! the next renewal is due ([`next_renewal`], kubelet's certificate manager rule through
//! [`rotation_deadline`]).

use std::time::{Duration, SystemTime};

use crate::kubelet_api::csr::issued::rotation_deadline;

/// Where a client certificate stands at a moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Standing {
    /// The kubeconfig names no client certificate, or it cannot be read.
    Missing,
    /// Its validity has not started (the Mac's clock, or the signer's, is off).
    NotYetValid,
    /// Past its end.
    Expired,
    /// In use until `not_after`.
    Valid,
}

impl Standing {
    /// Log and `doctor` value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Missing => "missing",
            Self::NotYetValid => "not_yet_valid",
            Self::Expired => "expired",
            Self::Valid => "valid",
        }
    }

    /// kubelet's rule for a kubeconfig at start: anything but a currently valid certificate
    /// sends it to the bootstrap kubeconfig.
    pub(crate) fn needs_bootstrap(self) -> bool {
        self != Self::Valid
    }
}

/// A certificate's validity window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Validity {
    /// Start.
    pub not_before: SystemTime,
    /// End.
    pub not_after: SystemTime,
}

/// Where the certificate with `validity` (`None`: there is none) stands at `now`.
pub(crate) fn standing(validity: Option<Validity>, now: SystemTime) -> Standing {
    match validity {
        None => Standing::Missing,
        Some(v) if now < v.not_before => Standing::NotYetValid,
        Some(v) if now >= v.not_after => Standing::Expired,
        Some(_) => Standing::Valid,
    }
}

/// Which credentials file a renewal's request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Credentials {
    /// The current certificate: a `selfnodeclient` request, which the cluster's approver
    /// approves for `system:nodes`.
    Current,
    /// The bootstrap kubeconfig's token: a `nodeclient` request, as at the first start.
    Bootstrap,
    /// Neither works: the certificate lapsed and no bootstrap kubeconfig is configured.
    None,
}

/// The credentials of the next request: the current certificate while it is valid, else the
/// bootstrap kubeconfig when there is one (kubelet's certificate manager does the same).
pub(crate) fn renewal_credentials(standing: Standing, has_bootstrap: bool) -> Credentials {
    match (standing, has_bootstrap) {
        (Standing::Valid, _) => Credentials::Current,
        (_, true) => Credentials::Bootstrap,
        (_, false) => Credentials::None,
    }
}

/// How long from `now` until the certificate with `validity` is renewed: a uniformly drawn
/// point at 70–90 % of its lifetime (`draw` in `[0, 1)`), zero when that point has passed.
pub(crate) fn next_renewal(validity: Validity, now: SystemTime, draw: f64) -> Duration {
    rotation_deadline(validity.not_before, validity.not_after, draw)
        .duration_since(now)
        .unwrap_or(Duration::ZERO)
}

/// Whether `now` is inside the renewal window (past the earliest renewal point, 70 % of the
/// lifetime): where a certificate with nothing to renew it should be replaced by hand.
pub(crate) fn in_renewal_window(validity: Validity, now: SystemTime) -> bool {
    now >= rotation_deadline(validity.not_before, validity.not_after, 0.0)
}

#[cfg(test)]
mod tests;
