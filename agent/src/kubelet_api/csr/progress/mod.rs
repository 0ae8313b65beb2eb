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
        let verdict = match client {
            None => Err("no API client: --offline or no usable kubeconfig".to_owned()),
            Some(c) => api::get(&Api::all(c), &csr, timeout)
                .await
                .map(|(v, _)| v)
                .map_err(|e| error_chain(&e)),
        };
        return Progress::Requested {
            csr,
            verdict,
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
