//! The start-up claim of this Node's Lease: one agent per Node. Runs before anything touches
//! tart, VMs or Pods. A free, released or expired Lease is taken at once; one whose holder is
//! seen renewing it is refused with an error naming that holder; one whose holder stopped
//! renewing (a crashed predecessor) is taken when it expires — or at once when that
//! predecessor ran on this Mac and its process is gone or the Mac booted since (a launchd
//! restart after a crash). The decision is [`super::holder::claim_step`]; this module reads,
//! writes, and asks the kernel whether the predecessor's process exists.
//!
//! Uses only what a node identity may do with its own Lease (get, create, update). API
//! failures are retried with [`API_RETRY`] until shutdown: the agent waits for the API
//! server rather than run a Node it has not claimed.

use std::time::Duration;

use k8s_openapi::{api::coordination::v1::Lease, jiff::Timestamp};
use kube::{Api, Client, api::PostParams};
use tokio::{sync::watch, time::Instant};
use tracing::{info, warn};

use super::{
    holder::{ClaimStep, Instance, Reading, claim_step, instance_identity, predecessor_gone},
    lease::{NAMESPACE, new_lease, renewed},
};
use crate::{backoff::API_RETRY, config::Config, errors::error_chain, kube_client::Origin};

/// Longest wait between two readings of a Lease held by another instance.
const POLL: Duration = Duration::from_secs(1);

/// A claimed Lease.
#[derive(Debug, Clone)]
pub(crate) struct Claimed {
    /// This instance's holder identity.
    pub identity: String,
    /// The Lease as written.
    pub lease: Lease,
    /// When the request that wrote it was sent (or earlier): the Lease is ours from then for
    /// its duration.
    pub sent: Instant,
}

/// Why the Lease was not claimed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ClaimError {
    /// No usable client configuration.
    #[error("cannot load the Kubernetes client configuration")]
    KubeConfig(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The kube client could not be built.
    #[error("cannot build the Kubernetes client")]
    Client(#[source] crate::kube_client::Error),
    /// Another live agent instance holds the Lease.
    #[error(
        "another tart-kubelet instance runs node {node}: Lease {NAMESPACE}/{node} is held and \
         renewed by {holder}; stop that agent (or give this one another --node-name)"
    )]
    HeldByAnother {
        node: String,
        /// The live holder.
        holder: String,
    },
    /// Shutdown was requested before the claim finished.
    #[error("stopped before the Node's Lease was claimed")]
    Cancelled,
}

/// What one read saw.
enum Seen {
    Lease(Box<Lease>),
    Absent,
    Failed,
}

/// How one write ended.
enum Wrote {
    Ok(Box<Lease>),
    /// Someone else wrote (or created) the Lease first.
    Conflict,
    Failed,
}

/// [`claim`] with the client configuration `kube_config` (or the error loading it).
///
/// # Errors
/// As [`claim`]; [`ClaimError::KubeConfig`] when there is no configuration.
pub(crate) async fn claim_with<E>(
    kube_config: Result<(kube::Config, Origin), E>,
    cfg: &Config,
    me: Option<Instance>,
    shutdown: watch::Receiver<bool>,
) -> Result<Claimed, ClaimError>
where
    E: std::error::Error + Send + Sync + 'static,
{
    let (kc, origin) = kube_config.map_err(|e| ClaimError::KubeConfig(Box::new(e)))?;
    let client = crate::kube_client::client(&kc, origin).map_err(ClaimError::Client)?;
    claim(client, cfg, me, shutdown).await
}

/// Claim Lease `kube-node-lease/<node>` for a new instance identity; `me` is this process on
/// this Mac, when the host says which Mac and boot it is.
///
/// # Errors
/// [`ClaimError::HeldByAnother`] when a live agent holds it; [`ClaimError::Cancelled`] when
/// `shutdown` turns true first.
pub(crate) async fn claim(
    client: Client,
    cfg: &Config,
    me: Option<Instance>,
    mut shutdown: watch::Receiver<bool>,
) -> Result<Claimed, ClaimError> {
    let api: Api<Lease> = Api::namespaced(client, NAMESPACE);
    let identity = instance_identity(&cfg.node_name, me.as_ref());
    let node = cfg.node_name.as_str();
    let mut first: Option<(Reading, Instant)> = None;
    let mut failures = 0u32;
    loop {
        let sent = Instant::now();
        let wait = match read(&api, node, cfg.api_timeout).await {
            Seen::Failed => {
                failures += 1;
                API_RETRY.delay(failures - 1)
            }
            Seen::Absent => {
                let lease = new_lease(node, &identity, cfg.lease_duration, Timestamp::now());
                match write(&api, node, &lease, cfg.api_timeout, true).await {
                    Wrote::Ok(lease) => return Ok(taken(identity, *lease, sent)),
                    Wrote::Conflict => Duration::ZERO,
                    Wrote::Failed => {
                        failures += 1;
                        API_RETRY.delay(failures - 1)
                    }
                }
            }
            Seen::Lease(lease) => {
                let now_seen = Reading::of(&lease);
                if first.is_none() && now_seen.holder.is_some() {
                    info!(holder = ?now_seen.holder, "the Node's Lease has a holder; checking whether it is renewed");
                }
                let (first_seen, since) =
                    first.get_or_insert_with(|| (now_seen.clone(), Instant::now()));
                let gone = holder_gone(me.as_ref(), now_seen.holder.as_deref());
                let step = claim_step(
                    &identity,
                    first_seen,
                    &now_seen,
                    since.elapsed(),
                    Timestamp::now(),
                    cfg.lease_duration,
                    POLL,
                    gone,
                );
                if gone && step == ClaimStep::Take {
                    info!(holder = ?now_seen.holder, "the Lease's holder ran on this Mac and is gone; taking the Lease now");
                }
                match step {
                    ClaimStep::Take => {
                        let want = renewed(
                            &lease,
                            &identity,
                            cfg.lease_duration,
                            None,
                            Timestamp::now(),
                        );
                        match write(&api, node, &want, cfg.api_timeout, false).await {
                            Wrote::Ok(lease) => return Ok(taken(identity, *lease, sent)),
                            // Written by someone else meanwhile: read again (a live writer
                            // shows as a renewal).
                            Wrote::Conflict => Duration::ZERO,
                            Wrote::Failed => {
                                failures += 1;
                                API_RETRY.delay(failures - 1)
                            }
                        }
                    }
                    ClaimStep::Refuse { holder } => {
                        return Err(ClaimError::HeldByAnother {
                            node: node.to_owned(),
                            holder,
                        });
                    }
                    ClaimStep::Wait(d) => d,
                }
            }
        };
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = shutdown.wait_for(|s| *s) => return Err(ClaimError::Cancelled),
        }
    }
}

/// Whether `holder` names an agent instance that ran on this Mac and can never renew again
/// ([`predecessor_gone`]); never when either side does not say which Mac it is.
fn holder_gone(me: Option<&Instance>, holder: Option<&str>) -> bool {
    let (Some(me), Some(theirs)) = (me, holder.and_then(Instance::of_holder)) else {
        return false;
    };
    predecessor_gone(me, &theirs, process_exists(theirs.pid))
}

/// Whether a process with id `pid` exists on this host (signal 0: a process we may not signal
/// exists too). An id the kernel cannot take counts as existing: the Lease is then waited out.
fn process_exists(pid: u32) -> bool {
    use nix::{errno::Errno, sys::signal::kill, unistd::Pid};
    let Ok(raw) = i32::try_from(pid) else {
        return true;
    };
    !matches!(kill(Pid::from_raw(raw), None), Err(Errno::ESRCH))
}

fn taken(identity: String, lease: Lease, sent: Instant) -> Claimed {
    info!(holder = %identity, "claimed the Node's Lease");
    Claimed {
        identity,
        lease,
        sent,
    }
}

async fn read(api: &Api<Lease>, node: &str, timeout: Duration) -> Seen {
    match tokio::time::timeout(timeout, api.get_opt(node)).await {
        Ok(Ok(Some(l))) => Seen::Lease(Box::new(l)),
        Ok(Ok(None)) => Seen::Absent,
        Ok(Err(e)) => {
            warn!(error = %error_chain(&e), "cannot read the Node's Lease; retrying");
            Seen::Failed
        }
        Err(_) => {
            warn!(?timeout, "reading the Node's Lease timed out; retrying");
            Seen::Failed
        }
    }
}

/// Create, or update with the resourceVersion precondition.
async fn write(
    api: &Api<Lease>,
    node: &str,
    lease: &Lease,
    timeout: Duration,
    create: bool,
) -> Wrote {
    let pp = PostParams::default();
    let res = if create {
        tokio::time::timeout(timeout, api.create(&pp, lease)).await
    } else {
        tokio::time::timeout(timeout, api.replace(node, &pp, lease)).await
    };
    match res {
        Ok(Ok(l)) => Wrote::Ok(Box::new(l)),
        Ok(Err(kube::Error::Api(s))) if s.code == 409 => Wrote::Conflict,
        Ok(Err(e)) => {
            warn!(error = %error_chain(&e), "cannot write the Node's Lease; retrying");
            Wrote::Failed
        }
        Err(_) => {
            warn!(?timeout, "writing the Node's Lease timed out; retrying");
            Wrote::Failed
        }
    }
}
