//! The kubelet API's serving certificate through the CSR API, used when no
//! `--tls-cert-file`/`--tls-private-key-file` are given: an ECDSA P-256 key made on the Mac
//! ([`request`]), a `certificates.k8s.io/v1` CertificateSigningRequest for signer
//! `kubernetes.io/kubelet-serving` ([`api`]), a wait for an operator's approval and the
//! signer's certificate, and the pair kept in `--cert-dir` ([`store`]) and served again after
//! a restart while it fits ([`issued`]). It is renewed at 70–90 % of its lifetime while the
//! old one keeps being served.
//!
//! Approval is left to the operator (`kubectl certificate approve`) or an approver of their
//! choice: kube-controller-manager does not approve kubelet serving requests. A denied or
//! failed request is reported (log and Node event) and asked again with a new key after a
//! backoff.

pub mod api;
pub mod issued;
pub mod request;
pub mod store;

use std::{net::IpAddr, path::PathBuf, sync::Arc, time::Duration, time::SystemTime};

use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use kube::Api;
use rustls::{
    crypto::CryptoProvider,
    pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, pem::PemObject},
    sign::CertifiedKey,
};
use tokio::sync::watch;
use tracing::{info, warn};

use self::{
    api::Verdict,
    issued::Leaf,
    request::{Sans, ServingKey},
    store::{Pair, Store},
};
use crate::{
    backoff::REQUEUE,
    metrics::{NodeMetrics, count_api_error},
    node::events::{NodeEvent, NodeEvents},
    telemetry::error_chain,
};

/// The name of the request made with the key of fingerprint `fingerprint`: the same key asks
/// under the same name, so an agent restarted while waiting finds its request again.
pub fn request_name(node: &str, fingerprint: &str) -> String {
    crate::api::event_name(node, &format!("serving-{fingerprint}"))
}

/// The names the Node advertises and the certificate must carry: its `InternalIP` and its
/// name, which is also its `kubernetes.io/hostname` label.
pub fn sans_for(node: &str, internal_ip: IpAddr) -> Sans {
    Sans {
        dns: vec![node.to_owned()],
        ips: vec![internal_ip],
    }
}

/// Node event reasons of the certificate's progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
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
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "ServingCertificatePending",
            Self::Issued => "ServingCertificateIssued",
            Self::Denied => "ServingCertificateDenied",
            Self::Failed => "ServingCertificateFailed",
        }
    }
}

/// PURE: the Node event for `reason` about request `csr`.
pub fn event(reason: Reason, csr: &str, detail: &str) -> NodeEvent {
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

/// Requests, keeps and renews the serving certificate.
pub struct Bootstrap {
    /// CertificateSigningRequests.
    pub api: Api<CertificateSigningRequest>,
    /// This Node.
    pub node: String,
    /// The names the certificate carries.
    pub sans: Sans,
    /// `--cert-dir`.
    pub store: Store,
    /// Deadline of each API call.
    pub timeout: Duration,
    /// Node events.
    pub events: NodeEvents,
    /// The TLS provider the certificate is loaded with.
    pub provider: Arc<CryptoProvider>,
    /// Failed calls are counted here.
    pub metrics: NodeMetrics,
}

/// The `resource` label of failed CSR calls in the API error metric.
const METRIC_RESOURCE: &str = "certificatesigningrequest";

/// An issued certificate ready to serve.
pub struct Ready {
    /// For the TLS resolver.
    pub certified: Arc<CertifiedKey>,
    /// Its facts.
    pub leaf: Leaf,
}

/// Why one attempt to obtain a certificate ended without one.
#[derive(Debug, thiserror::Error)]
enum AttemptError {
    #[error(transparent)]
    Key(#[from] request::KeyError),
    #[error("cannot write to the certificate directory")]
    Store(#[source] std::io::Error),
    #[error(transparent)]
    Call(#[from] api::CallError),
    #[error("certificate signing request {0} was refused: {1}")]
    Refused(String, String),
    #[error("the certificate issued for request {0} is unusable")]
    Unusable(String),
}

impl Bootstrap {
    /// The stored certificate if it still fits, else one obtained through the CSR API
    /// (retried with backoff until issued). `None` on shutdown.
    pub async fn first(&self, shutdown: &mut watch::Receiver<bool>) -> Option<Ready> {
        if let Some(pair) = self.store.current() {
            match self.ready(&pair) {
                Ok(r) => {
                    info!(dir = %self.store.dir().display(), "serving certificate loaded from the certificate directory");
                    return Some(r);
                }
                Err(why) => info!(
                    why,
                    "stored serving certificate not used; requesting a new one"
                ),
            }
        }
        self.obtain(shutdown).await
    }

    /// Renews the certificate in `cert` at its rotation deadline, for as long as the agent
    /// runs; the old certificate is served until the new one is issued.
    pub async fn renew(
        &self,
        cert: Arc<crate::kubelet_api::tls::ReloadingCert>,
        mut leaf: Leaf,
        shutdown: &mut watch::Receiver<bool>,
    ) {
        loop {
            let at = issued::rotation_deadline(leaf.not_before, leaf.not_after, rand::random());
            let wait = at
                .duration_since(SystemTime::now())
                .unwrap_or(Duration::ZERO);
            info!(
                in_secs = wait.as_secs(),
                "serving certificate renewal scheduled"
            );
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                _ = shutdown.wait_for(|s| *s) => return,
            }
            let Some(next) = self.obtain(shutdown).await else {
                return;
            };
            cert.set(next.certified);
            leaf = next.leaf;
            info!("renewed serving certificate in use");
        }
    }

    /// Attempts until a certificate is issued; `None` on shutdown.
    async fn obtain(&self, shutdown: &mut watch::Receiver<bool>) -> Option<Ready> {
        let mut failures = 0u32;
        loop {
            match self.attempt(shutdown).await {
                Ok(r) => return Some(r),
                Err(AttemptError::Call(api::CallError::Cancelled)) => return None,
                Err(e) => {
                    match &e {
                        AttemptError::Call(api::CallError::Api { source, .. }) => {
                            self.metrics.api_error(METRIC_RESOURCE, source);
                        }
                        AttemptError::Call(api::CallError::Timeout { .. }) => {
                            count_api_error(&self.metrics.api_errors, METRIC_RESOURCE, None);
                        }
                        _ => {}
                    }
                    let delay = REQUEUE.jittered(failures, rand::random());
                    failures = failures.saturating_add(1);
                    warn!(error = %error_chain(&e), retry_in_ms = delay.as_millis() as u64, "no serving certificate yet");
                    tokio::select! {
                        () = tokio::time::sleep(delay) => {}
                        _ = shutdown.wait_for(|s| *s) => return None,
                    }
                }
            }
            if *shutdown.borrow() {
                return None;
            }
        }
    }

    async fn attempt(&self, shutdown: &mut watch::Receiver<bool>) -> Result<Ready, AttemptError> {
        let key = match self.store.pending_key() {
            Some(k) => k,
            None => {
                let k = ServingKey::generate()?;
                self.store
                    .save_pending_key(&k)
                    .map_err(AttemptError::Store)?;
                k
            }
        };
        let name = request_name(&self.node, &key.fingerprint());
        let der = request::build(&key, &self.node, &self.sans)?;
        let csr = api::object(&name, &request::pem("CERTIFICATE REQUEST", &der));
        api::create(&self.api, &csr, self.timeout).await?;
        // The pending event goes out only while the request really waits.
        let (first, _) = api::get(&self.api, &name, self.timeout).await?;
        info!(csr = %name, verdict = first.as_str(), "serving certificate requested");
        if matches!(first, Verdict::Pending) {
            self.events
                .publish(&event(Reason::Pending, &name, ""))
                .await;
        }
        match api::wait_final(&self.api, &name, self.timeout, shutdown).await? {
            api::Final::Issued(pem) => {
                let chain: Vec<_> = CertificateDer::pem_slice_iter(&pem)
                    .filter_map(Result::ok)
                    .collect();
                let pair = Pair { chain, key };
                let ready = self
                    .ready(&pair)
                    .map_err(|_| AttemptError::Unusable(name.clone()))?;
                self.store
                    .save_current(&pair.chain, &pair.key)
                    .map_err(AttemptError::Store)?;
                self.store.drop_pending_key();
                let until = rfc3339(ready.leaf.not_after);
                info!(csr = %name, valid_until = %until, "serving certificate issued");
                self.events
                    .publish(&event(Reason::Issued, &name, &until))
                    .await;
                Ok(ready)
            }
            api::Final::Denied(why) => self.refused(Reason::Denied, name, why).await,
            api::Final::Failed(why) => self.refused(Reason::Failed, name, why).await,
        }
    }

    /// A refused request: its key is dropped, so the next attempt asks with a new one.
    async fn refused(
        &self,
        reason: Reason,
        name: String,
        why: String,
    ) -> Result<Ready, AttemptError> {
        self.store.drop_pending_key();
        self.events.publish(&event(reason, &name, &why)).await;
        Err(AttemptError::Refused(name, why))
    }

    /// `pair` as a servable certificate, if it fits this node now.
    fn ready(&self, pair: &Pair) -> Result<Ready, &'static str> {
        let leaf = pair
            .chain
            .first()
            .and_then(|c| issued::leaf(c))
            .ok_or("not a certificate")?;
        issued::fit(&leaf, &self.node, &self.sans, SystemTime::now()).map_err(|u| u.as_str())?;
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(pair.key.pkcs8().to_vec()));
        let certified = CertifiedKey::from_der(pair.chain.clone(), key, &self.provider)
            .map_err(|_| "the key does not fit the certificate")?;
        Ok(Ready {
            certified: Arc::new(certified),
            leaf,
        })
    }
}

/// `t` as RFC 3339.
pub fn rfc3339(t: SystemTime) -> String {
    k8s_openapi::jiff::Timestamp::try_from(t)
        .map(|ts| ts.to_string())
        .unwrap_or_else(|_| "?".into())
}

/// Where the certificate stands, as `doctor` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
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
pub async fn progress(
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
mod tests {
    use super::*;

    #[tokio::test]
    async fn progress_tells_a_first_request_from_a_renewal_and_an_issued_certificate() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("pki");
        let progress = || super::progress(dir.clone(), "mac-1", None, Duration::from_secs(1));
        assert_eq!(progress().await, Progress::None);

        let store = Store::new(&dir);
        let pending = ServingKey::generate().unwrap();
        store.save_pending_key(&pending).unwrap();
        let csr = request_name("mac-1", &pending.fingerprint());
        assert!(matches!(
            progress().await,
            Progress::Requested { csr: c, verdict: Err(_), serving_until: None } if c == csr
        ));

        // A stored certificate valid until 2126 (the test PKI's): a renewal is waiting.
        let pem = std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("src/kubelet_api/testdata/serving.crt"),
        )
        .unwrap();
        let chain: Vec<_> = CertificateDer::pem_slice_iter(&pem)
            .map(Result::unwrap)
            .collect();
        store
            .save_current(&chain, &ServingKey::generate().unwrap())
            .unwrap();
        let end = SystemTime::UNIX_EPOCH + Duration::from_secs(4_949_089_722);
        assert!(matches!(
            progress().await,
            Progress::Requested { serving_until: Some(t), .. } if t == end
        ));
        store.drop_pending_key();
        assert_eq!(
            progress().await,
            Progress::Issued {
                not_after: end,
                expired: false
            }
        );
    }

    #[test]
    fn the_request_name_is_stable_per_key_and_a_valid_object_name() {
        assert_eq!(request_name("mac-1", "0a1b2c3d"), "mac-1.serving-0a1b2c3d");
        let long = "n".repeat(253);
        let name = request_name(&long, "0a1b2c3d");
        assert!(
            name.len() <= 253 && name.ends_with(".serving-0a1b2c3d"),
            "{name}"
        );
    }

    #[test]
    fn the_pending_event_is_a_warning_naming_the_request_and_the_approval_command() {
        let e = event(Reason::Pending, "mac-1.serving-0a", "");
        assert!(e.warning);
        assert_eq!(e.reason, "ServingCertificatePending");
        assert!(
            e.message
                .contains("certificate signing request mac-1.serving-0a ")
                && e.message.contains("is pending approval")
                && e.message
                    .contains("kubectl certificate approve mac-1.serving-0a"),
            "{}",
            e.message
        );
        let e = event(Reason::Issued, "c", "2027-01-01T00:00:00Z");
        assert!(!e.warning && e.message.contains("valid until 2027-01-01T00:00:00Z"));
        assert!(event(Reason::Denied, "c", "r").warning);
    }
}
