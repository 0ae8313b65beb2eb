//! The client certificate the agent presents to the API server, replaceable at run time.

use std::{
    fmt,
    sync::{Arc, PoisonError, RwLock},
};

use base64::Engine as _;
use kube::config::AuthInfo;
use rustls::{
    SignatureScheme,
    client::ResolvesClientCert,
    pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject},
    sign::CertifiedKey,
};
use tokio::sync::watch;

/// Why a client certificate and key cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    /// Only one of the certificate and the key is given.
    #[error("{given} is set but {missing} is not")]
    Half {
        /// The one given.
        given: &'static str,
        /// The one missing.
        missing: &'static str,
    },
    /// A `-data` field is not base64.
    #[error("{field} is not valid base64")]
    Base64 {
        /// The kubeconfig field.
        field: &'static str,
        /// What the decoder said.
        #[source]
        source: base64::DecodeError,
    },
    /// A file field names a file that cannot be read.
    #[error("cannot read {field} {path}")]
    Read {
        /// The kubeconfig field.
        field: &'static str,
        /// The file as named.
        path: String,
        /// The read error.
        #[source]
        source: std::io::Error,
    },
    /// The certificate PEM holds no certificate.
    #[error("the client certificate holds no PEM CERTIFICATE block")]
    NoCertificate,
    /// The key PEM holds no private key.
    #[error("the client key holds no PEM private key")]
    NoKey,
    /// The key is of a kind rustls cannot sign with.
    #[error("the client key cannot be used for signing")]
    Key(#[source] rustls::Error),
}

/// The current client certificate (or none), shared by every connection that presents it.
/// [`ClientIdentity::replace`] takes effect at the next TLS handshake, and closes the
/// connections made before it (the connector in `retire.rs`), so the next request makes one.
#[derive(Clone, Default)]
pub struct ClientIdentity {
    key: Arc<RwLock<Option<Arc<CertifiedKey>>>>,
    /// Counts replacements; connections watch it.
    replaced: Arc<watch::Sender<u64>>,
}

impl ClientIdentity {
    /// An identity presenting `key` (or no certificate).
    #[must_use]
    pub fn new(key: Option<Arc<CertifiedKey>>) -> Self {
        Self {
            key: Arc::new(RwLock::new(key)),
            replaced: Arc::default(),
        }
    }

    /// Present `key` from the next handshake on; connections open until now are closed (an
    /// API server checks the certificate a connection was made with at every request, so
    /// one kept open would go on presenting the old one; kubelet closes them too).
    pub fn replace(&self, key: Arc<CertifiedKey>) {
        *self.key.write().unwrap_or_else(PoisonError::into_inner) = Some(key);
        self.replaced.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// The certificate presented now.
    #[must_use]
    pub fn current(&self) -> Option<Arc<CertifiedKey>> {
        self.key
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Changes with every [`ClientIdentity::replace`] from now on.
    pub(super) fn replacements(&self) -> watch::Receiver<u64> {
        self.replaced.subscribe()
    }
}

impl fmt::Debug for ClientIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The key stays out of logs; whether there is a certificate is enough.
        f.debug_struct("ClientIdentity")
            .field("present", &self.current().is_some())
            .finish()
    }
}

impl ResolvesClientCert for ClientIdentity {
    fn resolve(
        &self,
        _root_hint_subjects: &[&[u8]],
        _sigschemes: &[SignatureScheme],
    ) -> Option<Arc<CertifiedKey>> {
        self.current()
    }

    fn has_certs(&self) -> bool {
        // Always willing: a certificate may be installed after the client was built.
        true
    }
}

/// A signing key for the PEM certificate chain `cert_pem` and the PEM private key `key_pem`.
///
/// # Errors
/// [`IdentityError::NoCertificate`], [`IdentityError::NoKey`] or [`IdentityError::Key`].
pub fn certified_key(cert_pem: &[u8], key_pem: &[u8]) -> Result<Arc<CertifiedKey>, IdentityError> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem)
        .filter_map(Result::ok)
        .collect();
    if chain.is_empty() {
        return Err(IdentityError::NoCertificate);
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|_| IdentityError::NoKey)?;
    let signer = rustls::crypto::ring::default_provider()
        .key_provider
        .load_private_key(key)
        .map_err(IdentityError::Key)?;
    Ok(Arc::new(CertifiedKey::new(chain, signer)))
}

/// The kubeconfig user's client certificate, if it has one.
pub(super) fn from_auth_info(user: &AuthInfo) -> Result<Option<Arc<CertifiedKey>>, IdentityError> {
    let cert = load(
        user.client_certificate_data.as_deref(),
        user.client_certificate.as_deref(),
        ("client-certificate-data", "client-certificate"),
    )?;
    let key = load(
        user.client_key_data
            .as_ref()
            .map(secrecy::ExposeSecret::expose_secret),
        user.client_key.as_deref(),
        ("client-key-data", "client-key"),
    )?;
    match (cert, key) {
        (None, None) => Ok(None),
        (Some(_), None) => Err(IdentityError::Half {
            given: "client-certificate",
            missing: "client-key",
        }),
        (None, Some(_)) => Err(IdentityError::Half {
            given: "client-key",
            missing: "client-certificate",
        }),
        (Some(cert), Some(key)) => certified_key(&cert, &key).map(Some),
    }
}

/// A `-data` field (base64, preferred as kubectl does) or else the file its sibling names.
fn load(
    data: Option<&str>,
    file: Option<&str>,
    (data_field, file_field): (&'static str, &'static str),
) -> Result<Option<Vec<u8>>, IdentityError> {
    if let Some(data) = data {
        return base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .map(Some)
            .map_err(|source| IdentityError::Base64 {
                field: data_field,
                source,
            });
    }
    file.map(|path| {
        std::fs::read(path).map_err(|source| IdentityError::Read {
            field: file_field,
            path: path.to_owned(),
            source,
        })
    })
    .transpose()
}
