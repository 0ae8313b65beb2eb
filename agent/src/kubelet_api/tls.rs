//! TLS for the kubelet API: the serving certificate, swapped in at runtime ([`ReloadingCert`]:
//! from PEM files when they change, [`watch_files`], or when the CSR API issues a renewed
//! one), and client certificates *requested but not required* — verified against the client
//! CA when given (token clients send none).

use std::{
    io,
    path::{Path, PathBuf},
    sync::{Arc, RwLock},
    time::{Duration, SystemTime},
};

use rustls::{
    RootCertStore, ServerConfig,
    crypto::CryptoProvider,
    pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject},
    server::{ClientHello, ResolvesServerCert, WebPkiClientVerifier},
    sign::CertifiedKey,
};
use tokio::sync::watch;
use tracing::{info, warn};

use crate::{config::ClientCa, errors::error_chain};

/// The serving certificate and key files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CertFiles {
    /// PEM certificate chain, leaf first.
    pub cert: PathBuf,
    /// PEM private key.
    pub key: PathBuf,
}

/// A TLS setting that cannot be used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TlsError {
    /// A file could not be read.
    #[error("cannot read {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// The file holds no PEM certificate.
    #[error("no PEM certificate in {}", path.display())]
    NoCertificate {
        /// The file.
        path: PathBuf,
    },
    /// The file holds no PEM private key.
    #[error("no PEM private key in {}", path.display())]
    NoKey {
        /// The file.
        path: PathBuf,
    },
    /// The key is unusable or does not belong to the certificate.
    #[error("the key in {} does not fit the certificate", path.display())]
    BadKey {
        /// The key file.
        path: PathBuf,
        #[source]
        source: rustls::Error,
    },
    /// The crypto provider refused the protocol versions.
    #[error("the TLS provider refused the configuration")]
    Provider(#[source] rustls::Error),
    /// The client CA holds no usable CA certificate.
    #[error("no usable CA certificate in {origin}")]
    ClientCa {
        /// Where the client CA comes from ([`ClientCa::describe`]).
        origin: String,
    },
}

fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read {
        path: path.to_owned(),
        source,
    })
}

fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let pem = read(path)?;
    let certs: Vec<_> = CertificateDer::pem_slice_iter(&pem)
        .filter_map(Result::ok)
        .collect();
    if certs.is_empty() {
        return Err(TlsError::NoCertificate {
            path: path.to_owned(),
        });
    }
    Ok(certs)
}

/// Reads the certificate and key and checks that they belong together.
///
/// # Errors
/// [`TlsError`] naming the file at fault.
pub(crate) fn load(
    files: &CertFiles,
    provider: &CryptoProvider,
) -> Result<Arc<CertifiedKey>, TlsError> {
    let certs = certificates(&files.cert)?;
    let key = PrivateKeyDer::from_pem_slice(&read(&files.key)?).map_err(|_| TlsError::NoKey {
        path: files.key.clone(),
    })?;
    CertifiedKey::from_der(certs, key, provider)
        .map(Arc::new)
        .map_err(|source| TlsError::BadKey {
            path: files.key.clone(),
            source,
        })
}

/// The current serving certificate; every handshake takes the latest.
#[derive(Debug)]
pub(crate) struct ReloadingCert {
    current: RwLock<Arc<CertifiedKey>>,
}

impl ReloadingCert {
    /// Starts with `key`.
    pub(crate) fn new(key: Arc<CertifiedKey>) -> Self {
        Self {
            current: RwLock::new(key),
        }
    }

    /// Serves `key` from the next handshake on.
    pub(crate) fn set(&self, key: Arc<CertifiedKey>) {
        if let Ok(mut k) = self.current.write() {
            *k = key;
        }
    }
}

impl ResolvesServerCert for ReloadingCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.current.read().ok().map(|k| k.clone())
    }
}

/// The server configuration: HTTP/1.1 only, the reloading certificate, and client
/// certificates verified against `client_ca` when one is given.
///
/// # Errors
/// [`TlsError::ClientCa`] or [`TlsError::Read`] for the client CA file;
/// [`TlsError::Provider`] if the provider offers no safe protocol version.
pub(crate) fn server_config(
    cert: Arc<ReloadingCert>,
    client_ca: Option<&ClientCa>,
    provider: Arc<CryptoProvider>,
) -> Result<ServerConfig, TlsError> {
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(TlsError::Provider)?;
    let builder = match client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let certs = match ca {
                ClientCa::File(path) => certificates(path)?,
                ClientCa::Kubeconfig(der) => der
                    .iter()
                    .map(|c| CertificateDer::from(c.clone()))
                    .collect(),
            };
            let mut roots = RootCertStore::empty();
            let (added, _) = roots.add_parsable_certificates(certs);
            let ca_error = || TlsError::ClientCa {
                origin: ca.describe(),
            };
            if added == 0 {
                return Err(ca_error());
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .allow_unauthenticated()
                .build()
                .map_err(|_| ca_error())?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder.with_cert_resolver(cert);
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// What identifies a version of the files: inode, modification time and length of each (the
/// inode catches a same-size replacement by rename within the mtime granularity).
type Stamp = Option<[(u64, SystemTime, u64); 2]>;

fn stamp(files: &CertFiles) -> Stamp {
    use std::os::unix::fs::MetadataExt;
    let one = |p: &Path| {
        std::fs::metadata(p)
            .ok()
            .and_then(|m| Some((m.ino(), m.modified().ok()?, m.len())))
    };
    Some([one(&files.cert)?, one(&files.key)?])
}

/// Checks the files every `every` and swaps in a changed pair once it loads; a pair that does
/// not load (half-written, mismatched) is reported and the previous certificate kept.
pub(crate) async fn watch_files(
    files: CertFiles,
    cert: Arc<ReloadingCert>,
    provider: Arc<CryptoProvider>,
    every: Duration,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut seen = stamp(&files);
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            () = async { let _ = shutdown.wait_for(|s| *s).await; } => return,
        }
        let now = stamp(&files);
        if now == seen || now.is_none() {
            continue;
        }
        match load(&files, &provider) {
            Ok(key) => {
                seen = now;
                cert.set(key);
                info!(cert = %files.cert.display(), "serving certificate reloaded");
            }
            Err(e) => {
                seen = now;
                warn!(error = %error_chain(&e), "changed serving certificate not loaded; keeping the previous one");
            }
        }
    }
}
