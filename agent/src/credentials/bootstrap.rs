//! At start: keep a valid client certificate, else bootstrap one with the bootstrap
//! kubeconfig (kubelet's `LoadClientCert`): call failures are retried with backoff, a refused
//! request or one left unapproved past the wait ends the start with an error naming it.

use std::{path::Path, sync::Arc, time::Duration, time::SystemTime};

use tokio::sync::watch;
use tracing::{info, warn};

use super::{
    kubeconfig::{self, ClusterFacts},
    lifetime,
    obtain::{ObtainError, Requester},
};
use crate::{
    backoff::REQUEUE,
    config::Config,
    errors::error_chain,
    kubelet_api::csr::{api::CallError, rfc3339, store},
};

/// How long a bootstrap request may wait to be approved and issued (kubelet waits an hour).
pub(crate) const ISSUE_WAIT: Duration = Duration::from_secs(3600);

/// Why the agent could not get its client certificate.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BootstrapError {
    /// The bootstrap kubeconfig does not load.
    #[error("cannot load the bootstrap kubeconfig {path}")]
    BootstrapKubeconfig {
        path: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The request did not give a certificate.
    #[error("TLS bootstrap failed")]
    Obtain(#[source] ObtainError),
    /// The kubeconfig could not be written.
    #[error("cannot write the kubeconfig {path}")]
    WriteKubeconfig {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// Shutdown came first.
    #[error("cancelled by shutdown")]
    Cancelled,
}

/// With `--bootstrap-kubeconfig`: returns once `--kubeconfig` names a client certificate
/// valid now, bootstrapping one if needed. Without it, does nothing.
///
/// # Errors
/// [`BootstrapError`] when no certificate could be had.
pub(crate) async fn ensure_client_certificate(
    cfg: &Config,
    shutdown: &mut watch::Receiver<bool>,
) -> Result<(), BootstrapError> {
    let (Some(boot), Some(target)) = (&cfg.bootstrap_kubeconfig, &cfg.kubeconfig) else {
        return Ok(());
    };
    let read = kubeconfig::read_validity(target);
    let standing = lifetime::standing(read.as_ref().ok().copied(), SystemTime::now());
    if let (false, Ok(v)) = (standing.needs_bootstrap(), &read) {
        info!(kubeconfig = %target.display(), valid_until = %rfc3339(v.not_after), "client certificate valid; no bootstrap needed");
        return Ok(());
    }
    let why = match &read {
        Err(e) => error_chain(e),
        Ok(_) => format!("its client certificate is {}", standing.as_str()),
    };
    info!(kubeconfig = %target.display(), bootstrap_kubeconfig = %boot.display(), why, "requesting a client certificate with the bootstrap kubeconfig");
    let (boot_cfg, client) = load(boot, cfg.api_timeout).await?;
    let requester = Requester {
        api: kube::Api::all(client),
        node: cfg.node_name.clone(),
        store: store::Store::with_prefix(&cfg.cert_dir, store::CLIENT),
        timeout: cfg.api_timeout,
        wait: ISSUE_WAIT,
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut failures = 0u32;
    let issued = loop {
        match requester.obtain(&provider, shutdown).await {
            Ok(i) => break i,
            Err(ObtainError::Call(CallError::Cancelled)) => return Err(BootstrapError::Cancelled),
            Err(e) if e.is_transient() => {
                let delay = REQUEUE.jittered(failures, rand::random());
                failures = failures.saturating_add(1);
                warn!(error = %error_chain(&e), retry_in_ms = delay.as_millis() as u64, "no client certificate yet");
                tokio::select! {
                    () = tokio::time::sleep(delay) => {}
                    _ = shutdown.wait_for(|s| *s) => return Err(BootstrapError::Cancelled),
                }
            }
            Err(e) => return Err(BootstrapError::Obtain(e)),
        }
    };
    let kc = kubeconfig::render(
        &ClusterFacts::of(&boot_cfg),
        &requester.store.current_path(),
    );
    kubeconfig::write(target, &kc).map_err(|source| BootstrapError::WriteKubeconfig {
        path: target.display().to_string(),
        source,
    })?;
    info!(
        csr = %issued.csr,
        kubeconfig = %target.display(),
        valid_until = %rfc3339(issued.validity.not_after),
        user = %crate::kubelet_api::csr::request::node_user(&cfg.node_name),
        "client certificate bootstrapped; kubeconfig written"
    );
    Ok(())
}

/// The bootstrap kubeconfig as a client configuration, with the API deadline, and a client
/// built from it.
pub(super) async fn load(
    path: &Path,
    timeout: Duration,
) -> Result<(kube::Config, kube::Client), BootstrapError> {
    let err =
        |source: Box<dyn std::error::Error + Send + Sync>| BootstrapError::BootstrapKubeconfig {
            path: path.display().to_string(),
            source,
        };
    let file = kube::config::Kubeconfig::read_from(path).map_err(|e| err(Box::new(e)))?;
    let origin = crate::kube_client::Origin::of(path, &file);
    let mut kc = kube::Config::from_custom_kubeconfig(file, &Default::default())
        .await
        .map_err(|e| err(Box::new(e)))?;
    kc.connect_timeout = Some(timeout);
    kc.write_timeout = Some(timeout);
    let client = crate::kube_client::client(&kc, origin).map_err(|e| err(Box::new(e)))?;
    Ok((kc, client))
}
