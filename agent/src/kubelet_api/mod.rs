//! The kubelet HTTPS API (`--kubelet-port`, 10250 by default): what the API server calls for
//! `kubectl logs` and the node proxy.
//!
//! It owns TLS ([`tls`]: serving certificate from files, reloaded on change; client
//! certificates requested, not required), kubelet's authentication and authorization
//! ([`gate`], [`authz`], [`review`]), routing ([`routes`]) and the handlers ([`handler`]). It
//! leaves reading Pods to a [`PodSource`], reading container logs to a [`logs::LogSource`] and
//! running commands in the guest to a [`stream::ExecSource`], which the Pod side provides;
//! [`stream`] serves `kubectl exec` over SPDY.
//!
//! Without `--tls-cert-file`/`--tls-private-key-file` the API is not served: requesting a
//! serving certificate through the CSR API (`kubernetes.io/kubelet-serving`) is not
//! implemented yet.

mod authz;
mod cache;
mod gate;
mod handler;
pub mod logs;
mod pods;
mod review;
mod routes;
mod server;
pub mod stream;
mod tls;
mod x509;

use std::{net::SocketAddr, path::PathBuf, sync::Arc, time::Duration};

use tokio::{net::TcpListener, sync::watch, task::JoinHandle};
use tracing::{Instrument, info_span};

pub use pods::PodSource;
pub use review::{KubeReviewer, Reviewer};
pub use tls::{CertFiles, TlsError};

use crate::config::Config;

/// How often the serving certificate files are checked for a change.
pub const RELOAD_CHECK: Duration = Duration::from_secs(10);

/// What the server needs from the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// Listen address (`--kubelet-address`, `--kubelet-port`).
    pub addr: SocketAddr,
    /// Serving certificate and key.
    pub cert: CertFiles,
    /// CA for client certificates; `None` = bearer tokens only.
    pub client_ca: Option<PathBuf>,
    /// This Node's name (the object of every access review).
    pub node_name: String,
    /// How often the certificate files are checked.
    pub reload_check: Duration,
}

/// PURE: the server settings, or `None` when no serving certificate is configured (then the
/// API is not served).
pub fn settings(cfg: &Config) -> Option<Settings> {
    let (cert, key) = (
        cfg.tls_cert_file.clone()?,
        cfg.tls_private_key_file.clone()?,
    );
    Some(Settings {
        addr: SocketAddr::new(cfg.kubelet_address, cfg.kubelet_port),
        cert: CertFiles { cert, key },
        client_ca: cfg.client_ca_file.clone(),
        node_name: cfg.node_name.clone(),
        reload_check: RELOAD_CHECK,
    })
}

/// Loads the certificate, key and client CA as [`start`] would, without serving (for `doctor`).
///
/// # Errors
/// [`TlsError`] naming the file at fault.
pub fn preflight(settings: &Settings) -> Result<(), TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let key = tls::load(&settings.cert, &provider)?;
    tls::server_config(
        Arc::new(tls::ReloadingCert::new(key)),
        settings.client_ca.as_deref(),
        provider,
    )
    .map(drop)
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A certificate file is unusable.
    #[error("kubelet API TLS setup failed")]
    Tls(#[from] TlsError),
    /// The port could not be bound.
    #[error("cannot listen on {addr} for the kubelet API")]
    Bind {
        /// The address.
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// A started server.
#[derive(Debug)]
pub struct Running {
    /// The bound address (useful with port 0).
    pub addr: SocketAddr,
    /// The accept loop and the certificate watcher; both end on shutdown.
    pub tasks: Vec<JoinHandle<()>>,
}

/// Loads the certificate, binds the port and starts serving until `shutdown` turns true.
/// When `logs` is `None`, log requests for existing containers answer that logs are not
/// collected; when `exec` is `None`, exec requests answer that exec is not implemented.
///
/// # Errors
/// [`StartError`] for unusable certificate files or a port that cannot be bound.
pub async fn start(
    settings: Settings,
    reviewer: Arc<dyn Reviewer>,
    pods: Arc<dyn PodSource>,
    logs: Option<Arc<dyn logs::LogSource>>,
    exec: Option<Arc<dyn stream::ExecSource>>,
    shutdown: watch::Receiver<bool>,
) -> Result<Running, StartError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let key = tls::load(&settings.cert, &provider)?;
    let cert = Arc::new(tls::ReloadingCert::new(key));
    let config = tls::server_config(
        cert.clone(),
        settings.client_ca.as_deref(),
        provider.clone(),
    )?;
    let listener = TcpListener::bind(settings.addr)
        .await
        .map_err(|source| StartError::Bind {
            addr: settings.addr,
            source,
        })?;
    let addr = listener.local_addr().unwrap_or(settings.addr);
    let logs = logs.unwrap_or_else(|| Arc::new(logs::pending::NotCollected::new(pods.clone())));
    let api = Arc::new(handler::Api {
        gate: gate::Gate::new(settings.node_name.clone(), reviewer),
        pods,
        logs,
        exec,
    });
    let watcher = tokio::spawn(
        tls::watch_files(
            settings.cert.clone(),
            cert,
            provider,
            settings.reload_check,
            shutdown.clone(),
        )
        .instrument(info_span!("kubelet_api_cert")),
    );
    let server = tokio::spawn(
        server::serve(listener, Arc::new(config), api, shutdown)
            .instrument(info_span!("kubelet_api")),
    );
    Ok(Running {
        addr,
        tasks: vec![server, watcher],
    })
}

#[cfg(test)]
#[path = "server_tests.rs"]
mod server_tests;
