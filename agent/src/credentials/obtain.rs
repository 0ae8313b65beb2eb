//! One client certificate through the CSR API: the key (kept while its request waits, so a
//! restarted agent finds the same request), the request, the wait for approval and issuance
//! under a deadline, and the issued pair stored in the certificate directory.

use std::{sync::Arc, time::Duration, time::SystemTime};

use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use kube::Api;
use rustls::{
    crypto::CryptoProvider,
    pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, pem::PemObject as _},
    sign::CertifiedKey,
};
use tokio::sync::watch;
use tracing::info;

use super::{lifetime::Validity, request};
use crate::kubelet_api::csr::{
    api::{self, CallError, Final},
    issued,
    request::{KeyError, ServingKey, node_user},
    rfc3339,
    store::{NewKeyError, Pair, Store},
};

/// Files one request and waits for its certificate.
pub(crate) struct Requester {
    /// CertificateSigningRequests, through the credentials that file the request.
    pub api: Api<CertificateSigningRequest>,
    /// This Node.
    pub node: String,
    /// The client pair's files in `--cert-dir`.
    pub store: Store,
    /// Deadline of each API call.
    pub timeout: Duration,
    /// How long a request may wait to be approved and issued.
    pub wait: Duration,
}

/// An issued client certificate, stored.
pub(crate) struct Issued {
    /// The request that got it.
    pub csr: String,
    /// Its validity.
    pub validity: Validity,
    /// For a TLS client.
    pub certified: Arc<CertifiedKey>,
}

/// Why no certificate came of a request.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ObtainError {
    #[error(transparent)]
    Key(#[from] KeyError),
    #[error(transparent)]
    NewKey(#[from] NewKeyError),
    /// The certificate directory could not be written.
    #[error("cannot write the client certificate to the certificate directory")]
    Store(#[source] std::io::Error),
    #[error(transparent)]
    Call(#[from] CallError),
    /// An approver denied it or the signer failed it.
    #[error("certificate signing request {csr} was refused: {why}")]
    Refused { csr: String, why: String },
    /// The certificate does not name this node, is not valid now, or does not fit the key.
    #[error("the certificate issued for request {csr} is unusable: {why}")]
    Unusable { csr: String, why: &'static str },
    /// Nothing approved (or signed) it in time.
    #[error(
        "certificate signing request {csr} was not issued within {}s: approve it (kubectl certificate approve {csr}) or let the cluster's approver do it (docs/node.md, TLS bootstrap)",
        .after.as_secs()
    )]
    NotIssued { csr: String, after: Duration },
}

impl ObtainError {
    /// Whether asking again (same key, after a backoff) may succeed: a failed or timed-out call.
    pub(crate) fn is_transient(&self) -> bool {
        matches!(
            self,
            Self::Call(CallError::Api { .. } | CallError::Timeout { .. })
        )
    }
}

impl Requester {
    /// Requests a certificate and waits for it.
    ///
    /// # Errors
    /// [`ObtainError`]; [`CallError::Cancelled`] on shutdown.
    pub(crate) async fn obtain(
        &self,
        provider: &Arc<CryptoProvider>,
        shutdown: &mut watch::Receiver<bool>,
    ) -> Result<Issued, ObtainError> {
        let key = self.store.pending_or_new_key()?;
        let csr = request::object(&key, &self.node)?;
        let name = csr.metadata.name.clone().unwrap_or_default();
        api::create(&self.api, &csr, self.timeout).await?;
        info!(csr = %name, "{}", request::waiting_message(&name));
        let decided = tokio::time::timeout(
            self.wait,
            api::wait_final(&self.api, &name, self.timeout, shutdown),
        )
        .await
        .map_err(|_| ObtainError::NotIssued {
            csr: name.clone(),
            after: self.wait,
        })??;
        let why = match decided {
            Final::Issued(pem) => return self.keep(name, &pem, key, provider),
            Final::Denied(why) | Final::Failed(why) => why,
        };
        // A refused request's key is dropped: the next request asks with a new one.
        self.store.drop_pending_key();
        Err(ObtainError::Refused { csr: name, why })
    }

    fn keep(
        &self,
        csr: String,
        pem: &[u8],
        key: ServingKey,
        provider: &Arc<CryptoProvider>,
    ) -> Result<Issued, ObtainError> {
        let chain: Vec<_> = CertificateDer::pem_slice_iter(pem)
            .filter_map(Result::ok)
            .collect();
        let unusable = |why| ObtainError::Unusable {
            csr: csr.clone(),
            why,
        };
        let leaf = chain
            .first()
            .and_then(|c| issued::leaf(c))
            .ok_or_else(|| unusable("not a certificate"))?;
        if leaf.common_name != node_user(&self.node) {
            return Err(unusable("issued for another node"));
        }
        let now = SystemTime::now();
        if now < leaf.not_before || now >= leaf.not_after {
            return Err(unusable("not valid now"));
        }
        let der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.pkcs8().to_vec()));
        let certified = CertifiedKey::from_der(chain.clone(), der, provider)
            .map_err(|_| unusable("the key does not fit the certificate"))?;
        let pair = Pair { chain, key };
        self.store
            .save_current(&pair.chain, &pair.key)
            .map_err(ObtainError::Store)?;
        self.store.drop_pending_key();
        info!(csr = %csr, valid_until = %rfc3339(leaf.not_after), "client certificate issued");
        Ok(Issued {
            csr,
            validity: Validity {
                not_before: leaf.not_before,
                not_after: leaf.not_after,
            },
            certified: Arc::new(certified),
        })
    }
}
