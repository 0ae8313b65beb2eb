//! The node heartbeat: `coordination.k8s.io/v1` Lease `kube-node-lease/<node>`, renewed every
//! `lease_renew_interval` with `leaseDurationSeconds = lease_duration`, owned by the Node and
//! held by this agent instance ([`super::holder`]).
//!
//! A renewal is one `update` of the Lease as last read, so the server's resourceVersion check
//! makes it fail (409) when anyone else wrote it since. Only then is the Lease read again: still
//! ours → write again; another instance's → this agent is fenced ([`super::fence`]): it stops
//! renewing, says why (log, Warning event, `/readyz`) and never renews again. A deleted Lease
//! is created again. On shutdown the Lease is released (holder cleared, renew time kept) so
//! the next agent takes it at once instead of waiting for it to expire.
//!
//! Runs on its own task with its own `kube::Client` (its own connection pool) and its own
//! request deadline, so nothing slow — tart, host probes, status writes, a stuck Pod
//! reconcile — can delay it. After a failed renewal it retries with a short backoff (capped at
//! 7 s, like kubelet) and rebuilds its client, dropping pooled connections that may be dead.

use std::time::Duration;

use k8s_openapi::{
    api::coordination::v1::{Lease, LeaseSpec},
    apimachinery::pkg::apis::meta::v1::{MicroTime, OwnerReference},
    jiff::Timestamp,
};
use kube::{
    Client,
    api::{Api, ObjectMeta, PostParams},
};
use tokio::{sync::watch, time::Instant};
use tracing::{debug, error, info, warn};

use super::{
    ApiAccess,
    events::{NodeEvent, NodeEvents},
    fence::Fence,
    holder::{Reading, held_by_another},
};
use crate::{
    admin::Readiness,
    backoff::API_RETRY,
    images::prepull::{pacer::HeldTokens, tokens::TOKEN_PREFIX},
    kube_client::ApiTls,
    metrics::NodeMetrics,
};

/// Namespace of node Leases.
pub(crate) const NAMESPACE: &str = "kube-node-lease";

/// How long the release on shutdown may take at most.
const RELEASE_DEADLINE: Duration = Duration::from_secs(2);

/// What the lease task needs.
pub(crate) struct LeaseTask {
    /// Used to build (and rebuild) the task's own client.
    pub kube_config: kube::Config,
    /// The trust and client identity the task's clients share with the agent's others.
    pub tls: ApiTls,
    /// Node name (= Lease name).
    pub node_name: String,
    /// This instance's holder identity.
    pub identity: String,
    /// The Lease as last read or written (from the start-up claim).
    pub lease: Lease,
    /// `leaseDurationSeconds`.
    pub duration: Duration,
    /// Renew interval.
    pub interval: Duration,
    /// Deadline of one renewal request.
    pub timeout: Duration,
    pub metrics: NodeMetrics,
    /// Readiness bookkeeping for `/readyz`.
    pub readiness: Readiness,
    /// Forbidden-error logging.
    pub access: ApiAccess,
    /// Owner reference to our Node, once it is registered.
    pub owner: watch::Receiver<Option<OwnerReference>>,
    /// Raised when another instance is seen holding the Lease.
    pub fence: Fence,
    /// The image-pull tokens this Mac holds, written onto the Lease with each renewal.
    pub tokens: watch::Receiver<HeldTokens>,
}

/// `lease` renewed by `holder` at `now`: holder, duration and renew time set, owned by
/// `owner` when known. Taking it from another holder sets `acquireTime` and counts a
/// transition, as client-go's leader election does.
pub(crate) fn renewed(
    lease: &Lease,
    holder: &str,
    duration: Duration,
    owner: Option<&OwnerReference>,
    now: Timestamp,
) -> Lease {
    let mut l = lease.clone();
    let spec = l.spec.get_or_insert_with(LeaseSpec::default);
    if spec.holder_identity.as_deref() != Some(holder) {
        spec.acquire_time = Some(MicroTime(now));
        if spec
            .holder_identity
            .as_deref()
            .is_some_and(|h| !h.is_empty())
        {
            spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
        }
    }
    spec.holder_identity = Some(holder.into());
    spec.lease_duration_seconds =
        Some(i32::try_from(duration.as_secs().max(1)).unwrap_or(i32::MAX));
    spec.renew_time = Some(MicroTime(now));
    if let Some(o) = owner {
        l.metadata.owner_references = Some(vec![o.clone()]);
    }
    l
}

/// `lease` carrying exactly the pull tokens `held` (annotations under
/// [`TOKEN_PREFIX`]; other annotations are kept).
pub(crate) fn with_tokens(mut lease: Lease, held: &HeldTokens) -> Lease {
    let mut a = lease.metadata.annotations.take().unwrap_or_default();
    a.retain(|k, _| !k.starts_with(TOKEN_PREFIX));
    a.extend(held.iter().map(|(k, v)| (k.clone(), v.clone())));
    lease.metadata.annotations = (!a.is_empty()).then_some(a);
    lease
}

/// A new Lease for `node`, held by `holder`.
pub(crate) fn new_lease(node: &str, holder: &str, duration: Duration, now: Timestamp) -> Lease {
    let empty = Lease {
        metadata: ObjectMeta {
            name: Some(node.into()),
            namespace: Some(NAMESPACE.into()),
            ..ObjectMeta::default()
        },
        spec: None,
    };
    renewed(&empty, holder, duration, None, now)
}

/// `lease` released: no holder, renew time kept (the node lifecycle controller reads it).
pub(crate) fn released(lease: &Lease) -> Lease {
    let mut l = lease.clone();
    if let Some(s) = l.spec.as_mut() {
        s.holder_identity = None;
    }
    l
}

/// Backoff after `failures` (≥ 1) consecutive failed writes: [`API_RETRY`], never longer
/// than the normal interval.
pub(crate) fn retry_delay(failures: u32, interval: Duration) -> Duration {
    API_RETRY.delay(failures.saturating_sub(1)).min(interval)
}

/// The count of consecutive failed writes after one more, which [`retry_delay`] doubles
/// with. A failure the API server answered (a 403 while its authorizer warms up after a
/// restart, a 5xx) right after failures it did not answer means it is back: the count starts
/// again at one, so the next try comes after the first, short delay instead of the long one
/// an absent server earned. A server that keeps answering with failures backs off as usual.
pub(crate) fn failures_after(failures: u32, answered: bool, last_answered: bool) -> u32 {
    if answered && !last_answered {
        1
    } else {
        failures.saturating_add(1)
    }
}

/// How one renewal ended.
enum Renewal {
    Ok,
    /// The renewal failed; `answered` when the API server answered it (an API error), not
    /// when it could not be reached or did not answer in time.
    Failed {
        answered: bool,
    },
    /// Another instance holds the Lease.
    Fenced(String),
}

impl LeaseTask {
    /// Renew until `shutdown` turns true (then release) or until fenced.
    pub(crate) async fn run(mut self, mut shutdown: watch::Receiver<bool>) {
        let mut client = self.client();
        let mut failures = 0u32;
        let mut last_answered = true;
        let mut owner_open = true;
        let mut tokens_open = true;
        loop {
            let started = Instant::now();
            let outcome = match client {
                Some(ref c) => self.renew(c.clone()).await,
                None => Renewal::Failed { answered: false },
            };
            match outcome {
                Renewal::Ok => {
                    failures = 0;
                    last_answered = true;
                }
                Renewal::Failed { answered } => {
                    failures = failures_after(failures, answered, last_answered);
                    last_answered = answered;
                    // Drop pooled connections: a half-dead one could eat the next deadline too.
                    client = self.client();
                }
                Renewal::Fenced(holder) => {
                    self.fenced(holder, client).await;
                    return;
                }
            }
            let wait = if failures == 0 {
                self.interval
            } else {
                retry_delay(failures, self.interval)
            };
            tokio::select! {
                _ = tokio::time::sleep_until(started + wait) => {}
                r = self.owner.changed(), if owner_open => {
                    // Registered (or re-created) Node: own the Lease by it now.
                    owner_open = r.is_ok();
                }
                r = self.tokens.changed(), if tokens_open => {
                    // A pull took or gave back a token: other agents count it from the Lease.
                    tokens_open = r.is_ok();
                }
                _ = shutdown.changed() => {
                    if let Some(c) = client {
                        self.release(c).await;
                    }
                    return;
                }
            }
        }
    }

    fn client(&self) -> Option<Client> {
        match self.tls.client(&self.kube_config) {
            Ok(c) => Some(c),
            Err(error) => {
                warn!(%error, "cannot build the lease client");
                None
            }
        }
    }

    fn api(&self, client: Client) -> Api<Lease> {
        Api::namespaced(client, NAMESPACE)
    }

    async fn renew(&mut self, client: Client) -> Renewal {
        let started = Instant::now();
        let outcome = self.renew_once(client).await;
        if matches!(outcome, Renewal::Ok) {
            self.fence.renewed(started, self.duration);
        }
        self.metrics
            .lease_renew_duration
            .observe(started.elapsed().as_secs_f64());
        let label = match outcome {
            Renewal::Ok => {
                debug!("lease renewed");
                self.readiness.lease_renewed();
                "ok"
            }
            Renewal::Failed { .. } | Renewal::Fenced(_) => {
                self.readiness.api_failed();
                "error"
            }
        };
        self.metrics
            .lease_renewals
            .get_or_create(&crate::metrics::OutcomeLabels { outcome: label })
            .inc();
        outcome
    }

    /// One renewal: an update; after a conflict, one read and (if still ours) one more update.
    async fn renew_once(&mut self, client: Client) -> Renewal {
        let api = self.api(client);
        for _ in 0..2 {
            let owner = self.owner.borrow().clone();
            let want = with_tokens(
                renewed(
                    &self.lease,
                    &self.identity,
                    self.duration,
                    owner.as_ref(),
                    Timestamp::now(),
                ),
                &self.tokens.borrow(),
            );
            let pp = PostParams::default();
            let res =
                tokio::time::timeout(self.timeout, api.replace(&self.node_name, &pp, &want)).await;
            let err = match res {
                Ok(Ok(l)) => {
                    self.access.ok("update", "leases");
                    self.lease = l;
                    return Renewal::Ok;
                }
                Ok(Err(e)) => e,
                Err(_) => {
                    crate::metrics::count_api_error(&self.metrics.api_errors, "lease", None);
                    warn!(timeout = ?self.timeout, "lease renewal timed out");
                    return Renewal::Failed { answered: false };
                }
            };
            self.metrics.api_error("lease", &err);
            match &err {
                kube::Error::Api(s) if s.code == 404 => return self.recreate(&api, want).await,
                kube::Error::Api(s) if s.code == 409 => {}
                _ => {
                    self.access.failed("update", "leases", &err);
                    return Renewal::Failed {
                        answered: matches!(err, kube::Error::Api(_)),
                    };
                }
            }
            // Someone wrote (or deleted) the Lease since we last saw it: whose is it now?
            let get = api.get_opt(&self.node_name);
            let fresh = match tokio::time::timeout(self.timeout, get).await {
                Ok(Ok(Some(l))) => l,
                // Deleted (e.g. with its Node): an update with a resourceVersion cannot
                // create it.
                Ok(Ok(None)) => return self.recreate(&api, want).await,
                Ok(Err(e)) => {
                    self.metrics.api_error("lease", &e);
                    self.access.failed("get", "leases", &e);
                    return Renewal::Failed {
                        answered: matches!(e, kube::Error::Api(_)),
                    };
                }
                Err(_) => return Renewal::Failed { answered: false },
            };
            self.access.ok("get", "leases");
            if let Some(holder) = held_by_another(&self.identity, &Reading::of(&fresh)) {
                return Renewal::Fenced(holder);
            }
            self.lease = fresh;
        }
        Renewal::Failed { answered: true }
    }

    /// The Lease was deleted (e.g. with its Node): create it again, held by us.
    async fn recreate(&mut self, api: &Api<Lease>, mut want: Lease) -> Renewal {
        want.metadata.resource_version = None;
        want.metadata.uid = None;
        let pp = PostParams::default();
        match tokio::time::timeout(self.timeout, api.create(&pp, &want)).await {
            Ok(Ok(l)) => {
                self.access.ok("create", "leases");
                info!("lease created again");
                self.lease = l;
                Renewal::Ok
            }
            Ok(Err(e)) => {
                self.metrics.api_error("lease", &e);
                self.access.failed("create", "leases", &e);
                Renewal::Failed {
                    answered: matches!(e, kube::Error::Api(_)),
                }
            }
            Err(_) => Renewal::Failed { answered: false },
        }
    }

    /// Another instance holds our Lease: stop, and say why everywhere an operator looks.
    async fn fenced(&self, holder: String, client: Option<Client>) {
        error!(
            node = %self.node_name,
            me = %self.identity,
            %holder,
            "another tart-kubelet instance renews this Node's Lease; this agent stops acting on Pods and Node status (stop one of the two agents)"
        );
        self.readiness.fenced(&holder);
        self.fence.raise(holder.clone());
        if let Some(c) = client {
            let events = NodeEvents::new(
                c,
                &self.node_name,
                self.timeout,
                self.metrics.clone(),
                self.access.clone(),
            );
            events
                .publish(&NodeEvent {
                    warning: true,
                    reason: "DuplicateAgent",
                    message: format!(
                        "Another tart-kubelet instance ({holder}) holds this Node's Lease; \
                         agent {} stopped acting on Pods and Node status.",
                        self.identity
                    ),
                })
                .await;
        }
    }

    /// Clear the holder so a successor need not wait for the Lease to expire.
    async fn release(&self, client: Client) {
        let api = self.api(client);
        // Giving the Lease up gives every pull token back too.
        let want = with_tokens(released(&self.lease), &HeldTokens::new());
        let deadline = self.timeout.min(RELEASE_DEADLINE);
        let pp = PostParams::default();
        match tokio::time::timeout(deadline, api.replace(&self.node_name, &pp, &want)).await {
            Ok(Ok(_)) => info!("lease released"),
            Ok(Err(error)) => debug!(%error, "lease not released"),
            Err(_) => debug!("lease release timed out"),
        }
    }
}

#[cfg(test)]
mod tests;
