//! The node heartbeat: `coordination.k8s.io/v1` Lease `kube-node-lease/<node>`, renewed every
//! `lease_renew_interval` with `leaseDurationSeconds = lease_duration`, owned by the Node.
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
    api::{Api, ObjectMeta, Patch, PatchParams},
};
use tokio::{sync::watch, time::Instant};
use tracing::{debug, warn};

use super::{ApiAccess, FIELD_MANAGER};
use crate::{admin::Readiness, backoff::API_RETRY, metrics::NodeMetrics};

/// Namespace of node Leases.
pub const NAMESPACE: &str = "kube-node-lease";

/// What the lease task needs.
pub struct LeaseTask {
    /// Used to build (and rebuild) the task's own client.
    pub kube_config: kube::Config,
    /// Node name (= Lease name and holder identity).
    pub node_name: String,
    /// `leaseDurationSeconds`.
    pub duration: Duration,
    /// Renew interval.
    pub interval: Duration,
    /// Deadline of one renewal request.
    pub timeout: Duration,
    /// Metrics.
    pub metrics: NodeMetrics,
    /// Readiness bookkeeping for `/readyz`.
    pub readiness: Readiness,
    /// Forbidden-error logging.
    pub access: ApiAccess,
    /// Owner reference to our Node, once it is registered.
    pub owner: watch::Receiver<Option<OwnerReference>>,
}

/// The Lease object we apply.
pub fn desired_lease(
    node: &str,
    duration: Duration,
    owner: &OwnerReference,
    now: Timestamp,
) -> Lease {
    Lease {
        metadata: ObjectMeta {
            name: Some(node.into()),
            namespace: Some(NAMESPACE.into()),
            owner_references: Some(vec![owner.clone()]),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(node.into()),
            lease_duration_seconds: Some(duration.as_secs().max(1) as i32),
            renew_time: Some(MicroTime(now)),
            ..LeaseSpec::default()
        }),
    }
}

/// Backoff after `failures` (≥ 1) consecutive failed writes: [`API_RETRY`], never longer
/// than the normal interval.
pub fn retry_delay(failures: u32, interval: Duration) -> Duration {
    API_RETRY.delay(failures.saturating_sub(1)).min(interval)
}

impl LeaseTask {
    /// Renew until `shutdown` turns true.
    pub async fn run(mut self, mut shutdown: watch::Receiver<bool>) {
        'registered: loop {
            // The owner reference needs the Node's UID: wait for registration.
            let owner = loop {
                if let Some(o) = self.owner.borrow_and_update().clone() {
                    break o;
                }
                tokio::select! {
                    r = self.owner.changed() => if r.is_err() { return },
                    _ = shutdown.changed() => return,
                }
            };
            let mut client = self.client();
            let mut failures = 0u32;
            loop {
                let started = Instant::now();
                let ok = match client {
                    Some(ref c) => self.renew(c.clone(), &owner).await,
                    None => false,
                };
                if ok {
                    failures = 0;
                } else {
                    failures += 1;
                    // Drop pooled connections: a half-dead one could eat the next deadline too.
                    client = self.client();
                }
                let wait = if failures == 0 {
                    self.interval
                } else {
                    retry_delay(failures, self.interval)
                };
                tokio::select! {
                    _ = tokio::time::sleep_until(started + wait) => {}
                    _ = shutdown.changed() => return,
                }
                if self.owner.has_changed().unwrap_or(false) {
                    // The Node was re-created: own the Lease by the new Node.
                    continue 'registered;
                }
            }
        }
    }

    fn client(&self) -> Option<Client> {
        match Client::try_from(self.kube_config.clone()) {
            Ok(c) => Some(c),
            Err(error) => {
                warn!(%error, "cannot build the lease client");
                None
            }
        }
    }

    async fn renew(&self, client: Client, owner: &OwnerReference) -> bool {
        let api: Api<Lease> = Api::namespaced(client, NAMESPACE);
        let lease = desired_lease(&self.node_name, self.duration, owner, Timestamp::now());
        let pp = PatchParams::apply(FIELD_MANAGER).force();
        let started = Instant::now();
        let res = tokio::time::timeout(
            self.timeout,
            api.patch(&self.node_name, &pp, &Patch::Apply(&lease)),
        )
        .await;
        self.metrics
            .lease_renew_duration
            .observe(started.elapsed().as_secs_f64());
        let outcome = match res {
            Ok(Ok(_)) => {
                debug!("lease renewed");
                self.readiness.lease_renewed();
                self.access.ok("patch", "leases");
                "ok"
            }
            Ok(Err(e)) => {
                self.readiness.api_failed();
                self.metrics.api_error("lease", &e);
                self.access.failed("patch", "leases", &e);
                "error"
            }
            Err(_) => {
                self.readiness.api_failed();
                self.metrics
                    .api_errors
                    .get_or_create(&crate::metrics::ApiErrorLabels {
                        resource: "lease",
                        kind: "timeout",
                    })
                    .inc();
                warn!(timeout = ?self.timeout, "lease renewal timed out");
                "error"
            }
        };
        self.metrics
            .lease_renewals
            .get_or_create(&crate::metrics::OutcomeLabels { outcome })
            .inc();
        outcome == "ok"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_is_held_by_the_node_and_owned_by_it() {
        let owner = OwnerReference {
            api_version: "v1".into(),
            kind: "Node".into(),
            name: "mini-1".into(),
            uid: "u-1".into(),
            ..OwnerReference::default()
        };
        let l = desired_lease(
            "mini-1",
            Duration::from_secs(40),
            &owner,
            Timestamp::UNIX_EPOCH,
        );
        let spec = l.spec.unwrap();
        assert_eq!(spec.holder_identity.as_deref(), Some("mini-1"));
        assert_eq!(spec.lease_duration_seconds, Some(40));
        assert_eq!(l.metadata.namespace.as_deref(), Some("kube-node-lease"));
        assert_eq!(l.metadata.owner_references.unwrap()[0].uid, "u-1");
    }

    #[test]
    fn retry_backoff_doubles_and_is_capped() {
        let i = Duration::from_secs(10);
        assert_eq!(retry_delay(1, i), Duration::from_millis(500));
        assert_eq!(retry_delay(2, i), Duration::from_secs(1));
        assert_eq!(retry_delay(4, i), Duration::from_secs(4));
        assert_eq!(retry_delay(9, i), Duration::from_secs(7));
        assert_eq!(
            retry_delay(9, Duration::from_secs(2)),
            Duration::from_secs(2)
        );
    }
}
