//! TLS for HTTPS probes and hooks the way kubelet does it: the guest's certificate is neither checked
//! against a CA nor against the host name (kubelet's `InsecureSkipVerify`); the handshake
//! signature is still verified, so the peer holds the key of the certificate it sent.

use std::sync::Arc;

use rustls::ClientConfig;
use tokio_rustls::TlsConnector;

use crate::any_server_cert::AnyServerCert;

/// A connector that accepts any server certificate. No ALPN: probes speak HTTP/1.1.
pub(super) fn insecure_connector() -> TlsConnector {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .expect("the ring provider supports the default protocol versions")
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyServerCert(provider)))
        .with_no_client_auth();
    TlsConnector::from(Arc::new(config))
}
