//! The kubelet HTTPS API (`--kubelet-port`, 10250 by default): what the API server calls for
//! `kubectl logs` and the node proxy.
//!
//! It owns TLS ([`tls`]: serving certificate from files, reloaded on change, or requested
//! through the CSR API, [`csr`]; client certificates requested, not required), kubelet's
//! authentication and authorization
//! ([`gate`], [`authz`], [`review`]), routing ([`routes`]) and the handlers ([`handler`]). It
//! leaves reading Pods to a [`PodSource`], reading container logs to a [`logs::LogSource`] and
//! running commands in the guest to a [`stream::ExecSource`], which the Pod side provides
//! ([`Services`]); [`stream`] serves `kubectl exec`, `attach` and `port-forward` over SPDY.
//! [`limits`] bounds what callers can hold: deadlines, the connection cap ([`conns`]) and the
//! session caps.
//!
//! Without `--tls-cert-file`/`--tls-private-key-file` the agent requests its serving
//! certificate through the CSR API (`kubernetes.io/kubelet-serving`) and serves nothing until
//! it is issued ([`serve_requested`]).

mod authz;
mod cache;
mod conns;
mod context;
pub(crate) mod csr;
mod gate;
mod handler;
pub(crate) mod limits;
pub(crate) mod logs;
mod pods;
mod review;
mod routes;
pub(crate) mod scrape;
mod server;
pub(crate) mod stats;
pub(crate) mod stream;
mod streaming;
pub(crate) mod tls;
pub(crate) mod x509;

use std::{net::SocketAddr, sync::Arc, time::Duration};

use tokio::{net::TcpListener, sync::watch, task::JoinHandle};
use tracing::{Instrument, info_span};

pub(crate) use limits::LimitMetrics;
pub(crate) use pods::PodSource;
pub(crate) use review::{KubeReviewer, Reviewer};
pub(crate) use tls::{CertFiles, ReloadingCert, TlsError};

use crate::config::{ClientCa, Config, Limits};

/// How often the serving certificate files are checked for a change.
pub(crate) const RELOAD_CHECK: Duration = Duration::from_secs(10);

/// What the server needs from the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Settings {
    /// Listen address (`--kubelet-address`, `--kubelet-port`).
    pub addr: SocketAddr,
    /// Serving certificate and key.
    pub cert: CertFiles,
    /// CA for client certificates; `None` = bearer tokens only.
    pub client_ca: Option<ClientCa>,
    /// This Node's name (the object of every access review).
    pub node_name: String,
    /// How often the certificate files are checked.
    pub reload_check: Duration,
    /// Deadlines and caps.
    pub limits: Limits,
}

/// Where the server listens and whose API it is, whichever way its certificate comes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Listen {
    /// Listen address (`--kubelet-address`, `--kubelet-port`).
    pub addr: SocketAddr,
    /// CA for client certificates; `None` = bearer tokens only.
    pub client_ca: Option<ClientCa>,
    /// This Node's name (the object of every access review).
    pub node_name: String,
    /// Deadlines and caps.
    pub limits: Limits,
}

/// PURE: where the server listens, from the configuration and the resolved client CA
/// ([`crate::config::client_ca`]).
pub(crate) fn listen(cfg: &Config, client_ca: Option<ClientCa>) -> Listen {
    Listen {
        addr: SocketAddr::new(cfg.kubelet_address, cfg.kubelet_port),
        client_ca,
        node_name: cfg.node_name.clone(),
        limits: cfg.kubelet_api_limits,
    }
}

/// PURE: the server settings with certificate files, or `None` when none are configured
/// (then the certificate is requested through the CSR API); `client_ca` as resolved by
/// [`crate::config::client_ca`].
pub(crate) fn settings(cfg: &Config, client_ca: Option<ClientCa>) -> Option<Settings> {
    let (cert, key) = (
        cfg.tls_cert_file.clone()?,
        cfg.tls_private_key_file.clone()?,
    );
    Some(Settings {
        addr: SocketAddr::new(cfg.kubelet_address, cfg.kubelet_port),
        cert: CertFiles { cert, key },
        client_ca,
        node_name: cfg.node_name.clone(),
        reload_check: RELOAD_CHECK,
        limits: cfg.kubelet_api_limits,
    })
}

/// Loads the certificate, key and client CA as [`start`] would, without serving (for `doctor`).
///
/// # Errors
/// [`TlsError`] naming the file at fault.
pub(crate) fn preflight(settings: &Settings) -> Result<(), TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let key = tls::load(&settings.cert, &provider)?;
    tls::server_config(
        Arc::new(tls::ReloadingCert::new(key)),
        settings.client_ca.as_ref(),
        provider,
    )
    .map(drop)
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StartError {
    /// A certificate file is unusable.
    #[error("kubelet API TLS setup failed")]
    Tls(#[from] TlsError),
    /// The port could not be bound.
    #[error("cannot listen on {addr} for the kubelet API")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// What the handlers answer from: access reviews, the Pods, their logs, exec in their guests.
pub(crate) struct Services {
    /// TokenReview and SubjectAccessReview.
    pub reviewer: Arc<dyn Reviewer>,
    /// The Pods this agent runs.
    pub pods: Arc<dyn PodSource>,
    /// Container logs; `None`: log requests for existing containers answer that logs are
    /// not collected.
    pub logs: Option<Arc<dyn logs::LogSource>>,
    /// Commands in the guest; `None`: exec requests answer that exec is not available.
    pub exec: Option<Arc<dyn stream::ExecSource>>,
    pub exec_metrics: stream::ExecMetrics,
    /// What the limits refused.
    pub limit_metrics: LimitMetrics,
    /// CPU and memory for `/stats/summary` and `/metrics/resource`; `None`: 404.
    pub stats: Option<Arc<dyn stats::StatsSource>>,
    /// What `/metrics` and `/metrics/probes` read; `None`: 404.
    pub scrape: Option<scrape::Scrape>,
}

/// A started server.
#[derive(Debug)]
pub(crate) struct Running {
    /// The bound address (useful with port 0).
    pub addr: SocketAddr,
    /// The accept loop and the certificate watcher; both end on shutdown.
    pub tasks: Vec<JoinHandle<()>>,
}

/// Loads the certificate, binds the port and starts serving until `shutdown` turns true.
///
/// # Errors
/// [`StartError`] for unusable certificate files or a port that cannot be bound.
pub(crate) async fn start(
    settings: Settings,
    services: Services,
    shutdown: watch::Receiver<bool>,
) -> Result<Running, StartError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let key = tls::load(&settings.cert, &provider)?;
    let cert = Arc::new(tls::ReloadingCert::new(key));
    let listen = Listen {
        addr: settings.addr,
        client_ca: settings.client_ca.clone(),
        node_name: settings.node_name.clone(),
        limits: settings.limits,
    };
    let mut running = start_with_cert(
        listen,
        cert.clone(),
        provider.clone(),
        services,
        shutdown.clone(),
    )
    .await?;
    running.tasks.push(tokio::spawn(
        tls::watch_files(
            settings.cert.clone(),
            cert,
            provider,
            settings.reload_check,
            shutdown,
        )
        .instrument(info_span!("kubelet_api_cert")),
    ));
    Ok(running)
}

/// Binds the port and serves with whatever certificate `cert` holds at each handshake.
///
/// # Errors
/// [`StartError`] for an unusable client CA or a port that cannot be bound.
pub(crate) async fn start_with_cert(
    listen: Listen,
    cert: Arc<ReloadingCert>,
    provider: Arc<rustls::crypto::CryptoProvider>,
    services: Services,
    shutdown: watch::Receiver<bool>,
) -> Result<Running, StartError> {
    let Services {
        reviewer,
        pods,
        logs,
        exec,
        exec_metrics,
        limit_metrics,
        stats,
        scrape,
    } = services;
    let config = tls::server_config(cert, listen.client_ca.as_ref(), provider)?;
    let listener = TcpListener::bind(listen.addr)
        .await
        .map_err(|source| StartError::Bind {
            addr: listen.addr,
            source,
        })?;
    let addr = listener.local_addr().unwrap_or(listen.addr);
    let logs = logs.unwrap_or_else(|| Arc::new(logs::pending::NotCollected::new(pods.clone())));
    let l = listen.limits;
    let api = Arc::new(context::Api {
        gate: gate::Gate::new(listen.node_name.clone(), reviewer),
        pods,
        logs,
        exec,
        exec_metrics,
        stats,
        scrape,
        streams: limits::Slots::new(l.max_streams, limits::Limit::Streams, limit_metrics.clone()),
        follows: limits::Slots::new(
            l.max_log_follows,
            limits::Limit::LogFollows,
            limit_metrics.clone(),
        ),
        timeouts: stream::remotecommand::session::Timeouts {
            idle: l.streaming_idle,
            ..Default::default()
        },
    });
    let server = tokio::spawn(
        server::serve(listener, Arc::new(config), api, l, limit_metrics, shutdown)
            .instrument(info_span!("kubelet_api")),
    );
    Ok(Running {
        addr,
        tasks: vec![server],
    })
}

/// Obtains the serving certificate through the CSR API ([`csr::Bootstrap::first`]), then
/// serves with it and renews it until shutdown. Nothing listens until the first certificate
/// is issued. A server that cannot start is logged as an error (the agent keeps running
/// its Pods).
pub(crate) async fn serve_requested(
    listen: Listen,
    bootstrap: csr::Bootstrap,
    services: Services,
    mut shutdown: watch::Receiver<bool>,
) {
    let Some(first) = bootstrap.first(&mut shutdown).await else {
        return;
    };
    let cert = Arc::new(ReloadingCert::new(first.certified));
    let running = match start_with_cert(
        listen,
        cert.clone(),
        bootstrap.provider.clone(),
        services,
        shutdown.clone(),
    )
    .await
    {
        Ok(r) => r,
        Err(e) => {
            tracing::error!(error = %crate::errors::error_chain(&e), "cannot start the kubelet API");
            return;
        }
    };
    tracing::info!(addr = %running.addr, "kubelet API listening");
    bootstrap.renew(cert, first.leaf, &mut shutdown).await;
    for t in running.tasks {
        let _ = t.await;
    }
}

#[cfg(test)]
mod server_limits_tests;
#[cfg(test)]
mod server_tests;
