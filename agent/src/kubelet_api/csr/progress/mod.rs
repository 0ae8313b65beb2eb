//! Where the serving certificate stands, read from the certificate directory and (with a
//! client) the API: what `doctor` reports.

use std::{path::PathBuf, time::Duration, time::SystemTime};

use kube::Api;

use super::{
    api::{self, Verdict},
    issued,
    naming::request_name,
    store::Store,
};
use crate::errors::error_chain;

/// Where the certificate stands, as `doctor` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Progress {
    /// No certificate stored and no request made.
    None,
    /// A request was made with the stored pending key; its verdict when the API was asked.
    Requested {
        /// The request's name.
        csr: String,
        /// Its verdict (`Err` = could not be asked, with why).
        verdict: Result<Verdict, String>,
        /// How long it has been waiting for approval, while it does ([`pending_for`]).
        pending_for: Option<Duration>,
        /// A renewal: the end of the stored certificate still served meanwhile.
        serving_until: Option<SystemTime>,
    },
    /// A certificate is stored.
    Issued {
        /// End of validity.
        not_after: SystemTime,
        /// Whether it is past `not_after`.
        expired: bool,
    },
}

/// How long a request may wait for approval before it is reported as stuck: `doctor` fails
/// it, and `monitoring/alerts.yaml`'s `TartKubeletServingCertificatePending` fires at the same
/// age (an operator or an approver normally acts within a minute or two).
pub(crate) const PENDING_TOO_LONG: Duration = Duration::from_secs(300);

/// PURE: how long a request created at `created` has waited at `now`, while it is pending
/// (`None` once decided or with no creation time).
pub(crate) fn pending_for(
    verdict: &Verdict,
    created: Option<SystemTime>,
    now: SystemTime,
) -> Option<Duration> {
    match verdict {
        Verdict::Pending => Some(now.duration_since(created?).unwrap_or(Duration::ZERO)),
        _ => None,
    }
}

/// Reads the certificate directory and, with a client, the pending request's verdict.
pub(crate) async fn progress(
    dir: PathBuf,
    node: &str,
    client: Option<kube::Client>,
    timeout: Duration,
) -> Progress {
    let store = Store::new(dir);
    let now = SystemTime::now();
    let stored = store
        .current()
        .and_then(|p| p.chain.first().and_then(|c| issued::leaf(c)));
    if let Some(key) = store.pending_key() {
        let csr = request_name(node, &key.fingerprint());
        let seen = match client {
            None => Err("no API client: --offline or no usable kubeconfig".to_owned()),
            Some(c) => api::get(&Api::all(c), &csr, timeout)
                .await
                .map_err(|e| error_chain(&e)),
        };
        let pending_for = seen
            .as_ref()
            .ok()
            .and_then(|s| pending_for(&s.verdict, s.created, now));
        return Progress::Requested {
            csr,
            verdict: seen.map(|s| s.verdict),
            pending_for,
            serving_until: stored.map(|l| l.not_after).filter(|end| now < *end),
        };
    }
    match stored {
        Some(leaf) => Progress::Issued {
            not_after: leaf.not_after,
            expired: now >= leaf.not_after,
        },
        None => Progress::None,
    }
}

#[cfg(test)]
mod tests;
