//! TLS clients of the load generator, from the test control plane's PEM files: one that
//! trusts the cluster CA and presents no certificate, and one that presents a client
//! certificate (the API server's kubelet client) the agent authorizes.

use std::{path::Path, sync::Arc};

use tokio_rustls::{
    TlsConnector,
    rustls::{
        ClientConfig, RootCertStore,
        crypto::ring::default_provider,
        pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject},
    },
};

/// A connector trusting `ca` (PEM), presenting `client` (certificate and key PEM) if given.
///
/// # Panics
/// When a file does not load: the test's PKI is broken.
pub fn connector(ca: &Path, client: Option<(&Path, &Path)>) -> TlsConnector {
    let mut roots = RootCertStore::empty();
    let cas = CertificateDer::pem_file_iter(ca).expect("CA file");
    roots.add_parsable_certificates(cas.map(|c| c.expect("CA certificate")));
    let builder = ClientConfig::builder_with_provider(Arc::new(default_provider()))
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_root_certificates(roots);
    let config = match client {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => {
            let certs = CertificateDer::pem_file_iter(cert)
                .expect("client certificate file")
                .map(|c| c.expect("client certificate"))
                .collect();
            let key = PrivateKeyDer::from_pem_file(key).expect("client key");
            builder
                .with_client_auth_cert(certs, key)
                .expect("client certificate and key")
        }
    };
    TlsConnector::from(Arc::new(config))
}
