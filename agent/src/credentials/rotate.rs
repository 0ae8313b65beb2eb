//! The client certificate's renewal while the agent runs (kubelet's certificate manager): at a
//! random point in 70–90 % of its life a new key asks for a new certificate — through the
//! running client, authenticated by the current certificate (a `selfnodeclient` request), or
//! with the bootstrap token once the current one has lapsed — and the issued pair is stored,
//! the kubeconfig pointed at it, and the new certificate handed to the running clients, which
//! present it from their next connection. Failures are counted and retried with backoff; the
//! current certificate stays in use meanwhile.

use std::{path::PathBuf, sync::Arc, time::Duration, time::SystemTime};

use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use kube::Api;
use rustls::sign::CertifiedKey;
use tokio::sync::watch;
use tracing::{error, info, warn};

use super::{
    bootstrap::{ISSUE_WAIT, load},
    kubeconfig::{self, ClusterFacts},
    lifetime::{self, Credentials, Validity},
    metrics::ClientCertMetrics,
    obtain::{ObtainError, Requester},
};
use crate::{
    backoff::REQUEUE,
    errors::error_chain,
    kubelet_api::csr::{api::CallError, rfc3339, store::Store},
};

/// Hands a new certificate to the running clients.
pub(crate) type Install = Arc<dyn Fn(Arc<CertifiedKey>) + Send + Sync>;

/// Renews the client certificate for as long as the agent runs.
pub(crate) struct Rotation {
    /// CertificateSigningRequests through the running client (the current certificate).
    pub api: Api<CertificateSigningRequest>,
    /// `--bootstrap-kubeconfig`, for when the current certificate has lapsed.
    pub bootstrap: PathBuf,
    /// `--kubeconfig`, rewritten to point at the stored pair.
    pub kubeconfig: PathBuf,
    /// The cluster the running client talks to.
    pub cluster: ClusterFacts,
    /// This Node.
    pub node: String,
    /// The client pair's files.
    pub store: Store,
    /// Deadline of each API call.
    pub timeout: Duration,
    /// Expiry and failures.
    pub metrics: ClientCertMetrics,
    /// Where a new certificate goes.
    pub install: Install,
}

impl Rotation {
    /// Renews the certificate valid over `validity`, then its successors, until shutdown.
    pub(crate) async fn run(self, mut validity: Validity, mut shutdown: watch::Receiver<bool>) {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        self.metrics.in_use_until(validity.not_after);
        let mut failures = 0u32;
        loop {
            let wait = match failures {
                0 => lifetime::next_renewal(validity, SystemTime::now(), rand::random()),
                n => REQUEUE.jittered(n - 1, rand::random()),
            };
            if failures == 0 {
                info!(in_secs = wait.as_secs(), valid_until = %rfc3339(validity.not_after), "client certificate renewal scheduled");
            }
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                _ = shutdown.wait_for(|s| *s) => return,
            }
            match self.renew(&provider, validity, &mut shutdown).await {
                Ok(next) => {
                    failures = 0;
                    validity = next;
                    self.metrics.in_use_until(validity.not_after);
                    info!(valid_until = %rfc3339(validity.not_after), "renewed client certificate in use");
                }
                Err(RenewError::Obtain(ObtainError::Call(CallError::Cancelled))) => return,
                Err(e) => {
                    failures = failures.saturating_add(1);
                    self.metrics.renew_errors.inc();
                    let lapsed = SystemTime::now() >= validity.not_after;
                    match lapsed {
                        true => {
                            error!(error = %error_chain(&e), "client certificate expired and not renewed: the agent cannot reach the API server until it is")
                        }
                        false => {
                            warn!(error = %error_chain(&e), valid_until = %rfc3339(validity.not_after), "client certificate not renewed yet; the current one stays in use")
                        }
                    }
                }
            }
        }
    }

    /// One renewal: request, store, kubeconfig, install.
    async fn renew(
        &self,
        provider: &Arc<rustls::crypto::CryptoProvider>,
        validity: Validity,
        shutdown: &mut watch::Receiver<bool>,
    ) -> Result<Validity, RenewError> {
        let standing = lifetime::standing(Some(validity), SystemTime::now());
        let api = match lifetime::renewal_credentials(standing, true) {
            Credentials::Current => self.api.clone(),
            Credentials::Bootstrap | Credentials::None => {
                info!(bootstrap_kubeconfig = %self.bootstrap.display(), "client certificate {}; renewing with the bootstrap kubeconfig", standing.as_str());
                let (_, client) = load(&self.bootstrap, self.timeout)
                    .await
                    .map_err(RenewError::Bootstrap)?;
                Api::all(client)
            }
        };
        let requester = Requester {
            api,
            node: self.node.clone(),
            store: self.store.clone(),
            timeout: self.timeout,
            wait: ISSUE_WAIT,
        };
        let issued = requester
            .obtain(provider, shutdown)
            .await
            .map_err(RenewError::Obtain)?;
        let kc = kubeconfig::render(&self.cluster, &self.store.current_path());
        kubeconfig::write(&self.kubeconfig, &kc).map_err(RenewError::Kubeconfig)?;
        (self.install)(issued.certified);
        Ok(issued.validity)
    }
}

/// Why one renewal failed.
#[derive(Debug, thiserror::Error)]
enum RenewError {
    #[error("cannot use the bootstrap kubeconfig")]
    Bootstrap(#[source] super::BootstrapError),
    #[error("cannot obtain a new client certificate")]
    Obtain(#[source] ObtainError),
    #[error("cannot write the kubeconfig")]
    Kubeconfig(#[source] std::io::Error),
}
