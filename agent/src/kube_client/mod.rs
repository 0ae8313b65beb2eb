//! The agent's API-server client: a `kube::Client` over the agent's own HTTPS connector.
//!
//! Trust is exactly the CA the kubeconfig names (`certificate-authority` / `-data`), never the
//! system's store; a kubeconfig with an `https` server and no CA is a start-up error. The client
//! certificate is presented through [`ClientIdentity`], which can be replaced at run time: the
//! next TLS handshake uses the new certificate, no client is rebuilt. Tokens and the other
//! kubeconfig credentials, the base URI, extra headers, kube's retry policy and the kube config's
//! connect/read/write timeouts are kube's own layers, stacked over this connector.
//!
//! Loading the kubeconfig is left to the callers; [`Origin`] names where it came from so that
//! errors can say which kubeconfig and which cluster to fix.

mod identity;
mod retire;

use std::sync::Arc;

use hyper_rustls::FixedServerNameResolver;
use hyper_util::{client::legacy::connect::HttpConnector, rt::TokioExecutor};
use kube::client::{ClientBuilder, ConfigExt, retry::RetryPolicy};
use rustls::{ClientConfig, RootCertStore, pki_types::ServerName};
use tower::{BoxError, ServiceBuilder, retry::RetryLayer};
use tracing::warn;

use crate::any_server_cert::AnyServerCert;

pub use identity::{ClientIdentity, IdentityError, certified_key};

/// Which kubeconfig, and which of its clusters, a `kube::Config` came from (for errors).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The kubeconfig, as an operator would find it (usually its path).
    pub kubeconfig: String,
    /// The cluster entry of its current context.
    pub cluster: String,
}

impl Origin {
    /// The current context's cluster of `kubeconfig`, read from the file at `path`.
    #[must_use]
    pub fn of(path: &std::path::Path, kubeconfig: &kube::config::Kubeconfig) -> Self {
        let cluster = kubeconfig
            .current_context
            .as_ref()
            .and_then(|name| kubeconfig.contexts.iter().find(|c| &c.name == name))
            .and_then(|c| c.context.as_ref())
            .map_or_else(|| "(no current context)".to_owned(), |c| c.cluster.clone());
        Self {
            kubeconfig: path.display().to_string(),
            cluster,
        }
    }

    /// A configuration kube inferred ($KUBECONFIG, ~/.kube/config or in-cluster).
    #[must_use]
    pub fn inferred() -> Self {
        Self {
            kubeconfig: "the inferred kubeconfig ($KUBECONFIG, ~/.kube/config or in-cluster)"
                .to_owned(),
            cluster: "its current context's cluster".to_owned(),
        }
    }
}

/// Why no client could be built from a kubeconfig.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An `https` server with no CA to verify it by.
    #[error(
        "kubeconfig {}: cluster {:?} has an https server but no certificate-authority or \
         certificate-authority-data; tart-kubelet trusts only the CA its kubeconfig names",
        .0.kubeconfig, .0.cluster
    )]
    NoCertificateAuthority(Origin),
    /// Both a CA and `insecure-skip-tls-verify`, which kubectl refuses too.
    #[error(
        "kubeconfig {}: cluster {:?} sets both a certificate authority and \
         insecure-skip-tls-verify; remove one",
        .0.kubeconfig, .0.cluster
    )]
    CaAndInsecure(Origin),
    /// A CA certificate rustls cannot use as a trust anchor.
    #[error("kubeconfig {}: cluster {:?}: unusable certificate authority", .origin.kubeconfig, .origin.cluster)]
    BadCertificateAuthority {
        /// Where the CA came from.
        origin: Origin,
        /// What rustls said.
        #[source]
        source: rustls::Error,
    },
    /// The client certificate or key could not be loaded.
    #[error("kubeconfig {}: the user's client certificate", .origin.kubeconfig)]
    Identity {
        /// Where the certificate came from.
        origin: Origin,
        /// What was wrong with it.
        #[source]
        source: IdentityError,
    },
    /// An exec credential plugin answered with a client certificate, which this client does
    /// not present.
    #[error(
        "kubeconfig {}: the user's exec plugin returned a client certificate; tart-kubelet \
         takes client certificates from client-certificate(-data) and client-key(-data) only",
        .0.kubeconfig
    )]
    ExecCertificate(Origin),
    /// A `proxy-url`: the agent connects to the API server directly.
    #[error("kubeconfig {}: cluster {:?} sets proxy-url, which tart-kubelet does not support", .0.kubeconfig, .0.cluster)]
    Proxy(Origin),
    /// `tls-server-name` is not a DNS name or IP address.
    #[error("kubeconfig {}: cluster {:?}: tls-server-name {name:?} is not a DNS name or an IP address", .origin.kubeconfig, .origin.cluster)]
    ServerName {
        /// Where it came from.
        origin: Origin,
        /// The name as written.
        name: String,
    },
    /// kube refused the configuration (credentials it could not load, a header it could not
    /// encode).
    #[error("kubeconfig {}: kube could not use the configuration", .origin.kubeconfig)]
    Kube {
        /// Where it came from.
        origin: Origin,
        /// What kube said.
        #[source]
        source: kube::Error,
    },
}

/// How the API server's certificate is verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Trust {
    /// By the kubeconfig's CA (also what a plain `http` server gets: no TLS is spoken).
    KubeconfigCa,
    /// Not at all: the kubeconfig's `insecure-skip-tls-verify: true`, as kubectl honours it.
    SkipVerify,
}

/// The trust a cluster entry asks for, or why it cannot be had.
fn trust(https: bool, has_ca: bool, insecure: bool, origin: &Origin) -> Result<Trust, Error> {
    match (insecure, has_ca) {
        (true, true) => Err(Error::CaAndInsecure(origin.clone())),
        (true, false) => Ok(Trust::SkipVerify),
        (false, false) if https => Err(Error::NoCertificateAuthority(origin.clone())),
        (false, _) => Ok(Trust::KubeconfigCa),
    }
}

/// The TLS side of the agent's API connections: the trust and the current client identity.
/// Clones share the identity, so every client built from them presents a replaced certificate
/// on its next handshake.
#[derive(Clone)]
pub struct ApiTls {
    config: Arc<ClientConfig>,
    identity: ClientIdentity,
    server_name: Option<ServerName<'static>>,
    origin: Origin,
}

impl ApiTls {
    /// The trust and identity `config` names.
    ///
    /// # Errors
    /// [`Error`] names the kubeconfig and what to fix in it.
    pub fn new(config: &kube::Config, origin: Origin) -> Result<Self, Error> {
        if config.proxy_url.is_some() {
            return Err(Error::Proxy(origin));
        }
        let https = config.cluster_url.scheme_str() == Some("https");
        let roots = config.root_cert.as_deref().unwrap_or_default();
        let trust = trust(
            https,
            !roots.is_empty(),
            config.accept_invalid_certs,
            &origin,
        )?;
        let identity = match identity::from_auth_info(&config.auth_info) {
            Ok(Some(key)) => ClientIdentity::new(Some(key)),
            Ok(None) => ClientIdentity::new(None),
            Err(source) => return Err(Error::Identity { origin, source }),
        };
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .expect("the ring provider supports the default protocol versions");
        let builder = match trust {
            Trust::SkipVerify => {
                warn!(kubeconfig = %origin.kubeconfig, cluster = %origin.cluster,
                    "insecure-skip-tls-verify: the API server's certificate is not verified");
                builder
                    .dangerous()
                    .with_custom_certificate_verifier(Arc::new(AnyServerCert(provider)))
            }
            Trust::KubeconfigCa => {
                let mut store = RootCertStore::empty();
                for der in roots {
                    store.add(der.clone().into()).map_err(|source| {
                        Error::BadCertificateAuthority {
                            origin: origin.clone(),
                            source,
                        }
                    })?;
                }
                builder.with_root_certificates(store)
            }
        };
        let mut tls = builder.with_client_cert_resolver(Arc::new(identity.clone()));
        // A resumed session keeps the identity of the handshake it resumes, so a replaced
        // certificate would go unseen; client-go sets no session cache either.
        tls.resumption = rustls::client::Resumption::disabled();
        let server_name = match &config.tls_server_name {
            None => None,
            Some(name) => {
                Some(
                    ServerName::try_from(name.clone()).map_err(|_| Error::ServerName {
                        origin: origin.clone(),
                        name: name.clone(),
                    })?,
                )
            }
        };
        Ok(Self {
            config: Arc::new(tls),
            identity,
            server_name,
            origin,
        })
    }

    /// The identity every client built from this presents; replace it to rotate the
    /// certificate.
    #[must_use]
    pub fn identity(&self) -> &ClientIdentity {
        &self.identity
    }

    /// A client for `config`'s server with kube's layers (base URI, credentials, headers,
    /// retry policy) and `config`'s timeouts over this TLS. Each call has its own
    /// connection pool.
    ///
    /// # Errors
    /// [`Error::Kube`] when kube cannot load the credentials; [`Error::ExecCertificate`] when
    /// an exec plugin answers with a certificate.
    pub fn client(&self, config: &kube::Config) -> Result<kube::Client, Error> {
        let kube_err = |source| Error::Kube {
            origin: self.origin.clone(),
            source,
        };
        let auth = config.auth_layer().map_err(kube_err)?;
        if auth.is_none() && config.auth_info.exec.is_some() {
            // kube's exec support yields a certificate instead of a layer; it would go unused.
            return Err(Error::ExecCertificate(self.origin.clone()));
        }
        let headers = config.extra_headers_layer().map_err(kube_err)?;
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config((*self.config).clone())
            .https_or_http();
        let https = match &self.server_name {
            Some(name) => {
                https.with_server_name_resolver(FixedServerNameResolver::new(name.clone()))
            }
            None => https,
        };
        let mut connector =
            hyper_timeout::TimeoutConnector::new(https.enable_http1().wrap_connector(http));
        connector.set_connect_timeout(config.connect_timeout);
        connector.set_read_timeout(config.read_timeout);
        connector.set_write_timeout(config.write_timeout);
        connector.set_reset_reader_on_write(config.reset_reader_on_write);
        let connector = retire::Retiring::new(connector, self.identity.clone());
        let http_client = hyper_util::client::legacy::Builder::new(TokioExecutor::new())
            .build::<_, kube::client::Body>(connector);
        let service = ServiceBuilder::new()
            .layer(config.base_uri_layer())
            .option_layer(
                config
                    .default_retry
                    .then(|| RetryLayer::new(RetryPolicy::server_retry())),
            )
            .option_layer(auth)
            .layer(headers)
            .map_err(BoxError::from)
            .service(http_client);
        Ok(ClientBuilder::new(service, config.default_namespace.clone()).build())
    }
}

/// A client for `config` with a trust and identity of its own (see [`ApiTls`] to share them).
///
/// # Errors
/// As [`ApiTls::new`] and [`ApiTls::client`].
pub fn client(config: &kube::Config, origin: Origin) -> Result<kube::Client, Error> {
    ApiTls::new(config, origin)?.client(config)
}

#[cfg(test)]
mod tests;
