//! The loop that obtains the serving certificate: the stored one while it fits, else a
//! request (made, waited for, retried with backoff after a refusal or a failed call), then a
//! renewal at the rotation deadline while the current certificate keeps being served.

use std::{sync::Arc, time::Duration, time::SystemTime};

use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use kube::Api;
use rustls::{
    crypto::CryptoProvider,
    pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, pem::PemObject},
    sign::CertifiedKey,
};
use tokio::sync::watch;
use tracing::{info, warn};

use super::{
    api,
    api::Verdict,
    issued,
    issued::Leaf,
    naming::{Reason, event, request_name, rfc3339},
    request::{self, Sans},
    store::{Pair, Store},
};
use crate::{
    backoff::REQUEUE,
    errors::error_chain,
    metrics::{NodeMetrics, count_api_error},
    node::events::NodeEvents,
};

/// Seconds since the Unix epoch (0 before it).
fn unix_seconds(t: SystemTime) -> i64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// Requests, keeps and renews the serving certificate.
pub(crate) struct Bootstrap {
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
const METRIC_RESOURCE: &str = crate::metrics::CSR_RESOURCE;

/// An issued certificate ready to serve.
pub(crate) struct Ready {
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
    #[error(transparent)]
    NewKey(#[from] super::store::NewKeyError),
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
    pub(crate) async fn first(&self, shutdown: &mut watch::Receiver<bool>) -> Option<Ready> {
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
    pub(crate) async fn renew(
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
        let key = self.store.pending_or_new_key()?;
        let name = request_name(&self.node, &key.fingerprint());
        let der = request::build(&key, &self.node, &self.sans)?;
        let csr = api::object(&name, &request::pem("CERTIFICATE REQUEST", &der));
        api::create(&self.api, &csr, self.timeout).await?;
        // The pending event goes out only while the request really waits.
        let first = api::get(&self.api, &name, self.timeout).await?;
        info!(csr = %name, verdict = first.verdict.as_str(), "serving certificate requested");
        if matches!(first.verdict, Verdict::Pending) {
            // Since when it waits: its creation (a restarted agent finds its request again).
            let since = first.created.unwrap_or_else(SystemTime::now);
            self.metrics
                .serving_csr_pending_since
                .set(unix_seconds(since));
            self.events
                .publish(&event(Reason::Pending, &name, ""))
                .await;
        }
        let decided = api::wait_final(&self.api, &name, self.timeout, shutdown).await;
        // Once decided nothing waits; after a failed call the request still waits (the next
        // attempt finds it again), so its time stays.
        if decided.is_ok() {
            self.metrics.serving_csr_pending_since.set(0);
        }
        match decided? {
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
