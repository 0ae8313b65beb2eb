//! Registration and the node status task.
//!
//! Every `node_status_check_interval` (or at once when [`HostHealth`] changes) it probes tart,
//! reads host facts, keeps the cordon in line with the host checks and the quarantine
//! ([`super::readiness::Gatekeeper`]) and computes the desired status ([`super::status::desired_status`]). It
//! writes `nodes/status` (strategic merge patch, conditions merge by type) when the server's
//! copy of our Node, as the Node watch shows it, differs from the desired status in anything
//! the agent owns ([`super::status_due`]), otherwise every `node_status_report_interval` as a
//! heartbeat. A watch event that shows such a difference (e.g. the node lifecycle controller
//! set our conditions to `Unknown`) starts a check at once. Each request has a deadline;
//! failures are logged, counted and retried on the next tick — never fatal. If the Node
//! disappears it is registered again. Once the agent is fenced ([`super::fence`]) the task
//! ends without writing again.

use std::{collections::BTreeMap, sync::Arc};

use k8s_openapi::{
    api::core::v1::{Node, NodeCondition, NodeStatus},
    apimachinery::pkg::apis::meta::v1::{OwnerReference, Time},
    jiff::Timestamp,
};
use kube::{
    Client,
    api::{Api, Patch, PatchParams},
};
use serde_json::json;
use tart::Tart;
use tokio::{sync::watch, time::Instant};
use tracing::{debug, info, warn};

use super::{
    ApiAccess,
    events::{NodeEvent, NodeEvents, schedulable_event, transition_events},
    health::HostHealth,
    probe,
    readiness::{Gatekeeper, ReadinessMetrics},
    spec,
    status::{self, StatusInput},
    status_due::{owned_differs, write_due},
    watch::{ObservedNode, WatchLive},
};
use crate::{
    admin::Readiness,
    config::Config,
    host::{HostFacts, HostInfo},
    images::{
        inventory::{Held, node_images},
        prepull::runner::Progress,
    },
    metrics::{ConditionLabels, NodeMetrics, OutcomeLabels},
};

/// Everything the status task needs.
pub(crate) struct StatusLoop<T: Tart> {
    /// API client (shared with the Pod side; the Lease has its own).
    pub client: Client,
    /// Configuration.
    pub cfg: Arc<Config>,
    /// Tart driver (only `version` is used here).
    pub tart: Arc<T>,
    /// Host facts.
    pub host: Arc<dyn HostInfo>,
    /// Health shared with the Pod side.
    pub health: HostHealth,
    pub metrics: NodeMetrics,
    /// Host readiness metrics.
    pub readiness_metrics: ReadinessMetrics,
    /// `/readyz` bookkeeping.
    pub readiness: Readiness,
    /// Forbidden-error logging.
    pub access: ApiAccess,
    /// Publishes the Node's owner reference once registered (for the Lease).
    pub owner: watch::Sender<Option<OwnerReference>>,
    /// The node's InternalIP.
    pub internal_ip: String,
    /// Our Node as the Node watch sees it (deletion is noticed at once).
    pub observed: watch::Receiver<ObservedNode>,
    /// Whether that watch is connected (else the Node is read before deciding).
    pub watch_live: WatchLive,
    /// The `Starting` event was sent (once per process).
    pub started: std::sync::atomic::AtomicBool,
    /// Names the other holder once this agent is fenced.
    pub fence: watch::Receiver<Option<String>>,
    /// The images this Mac holds, from the image keeper (`None` until its first pass).
    pub images: watch::Receiver<Option<Vec<Held>>>,
    /// Pre-pull progress (`None` until the declaration was first read).
    pub prepull: watch::Receiver<Option<Progress>>,
}

/// A watch event may start a check early only this long after our last write, so a server
/// copy that never matches cannot turn the loop into a tight one.
const EARLY_CHECK_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

struct Registered {
    /// Publishes events about this Node.
    events: NodeEvents,
    /// UID of the Node we registered.
    uid: Option<String>,
    /// The watch has shown that Node (so a later "absent" means it was deleted).
    seen: bool,
    labels: BTreeMap<String, String>,
    /// The unavailable VM profiles the Node's annotation last said.
    unavailable: BTreeMap<String, String>,
    /// Conditions we last wrote, or the server's right after registration.
    previous: Vec<NodeCondition>,
    /// `spec.unschedulable` as last seen (false before the first look, as kubelet's).
    unschedulable: bool,
    last_written: Option<(NodeStatus, Instant)>,
}

impl<T: Tart> StatusLoop<T> {
    /// Run until `shutdown` turns true.
    pub(crate) async fn run(self, mut shutdown: watch::Receiver<bool>) {
        let mut health_rx = self.health.subscribe();
        let mut observed = self.observed.clone();
        let mut fence = self.fence.clone();
        let mut images = self.images.clone();
        let mut prepull = self.prepull.clone();
        let mut reg: Option<Registered> = None;
        let mut failures = 0u32;
        let mut gatekeeper = Gatekeeper::new(self.readiness_metrics.clone());
        loop {
            if fence.borrow_and_update().is_some() {
                info!("fenced: no more Node status writes");
                return;
            }
            let facts = self.facts().await;
            self.probe().await;
            let snap = self.health.snapshot();
            self.update_gauges(&facts, &snap);
            let tart_version = snap.probe.version().map(str::to_owned);

            let ok = match reg.as_mut() {
                None => match self
                    .register(&facts, tart_version.as_deref(), &snap.unavailable_profiles)
                    .await
                {
                    Some(r) => {
                        reg = Some(r);
                        true
                    }
                    None => false,
                },
                Some(r) => {
                    let unavailable = &snap.unavailable_profiles;
                    let want = spec::desired_labels(
                        &self.cfg,
                        &facts,
                        tart_version.as_deref(),
                        unavailable,
                    );
                    if want != r.labels || *unavailable != r.unavailable {
                        // e.g. tart was upgraded, or a VM profile became (un)available: refresh
                        // the labels and annotation (a cheap get + patch).
                        if let Some(fresh) = self
                            .register(&facts, tart_version.as_deref(), unavailable)
                            .await
                        {
                            r.labels = fresh.labels;
                            r.unavailable = fresh.unavailable;
                        }
                    }
                    true
                }
            };
            if let (true, Some(r)) = (ok, reg.as_mut()) {
                let node = self.current_node(r).await;
                gatekeeper
                    .step(
                        &snap,
                        node.as_ref().map(|n| n.as_ref()),
                        &self.client,
                        self.cfg.api_timeout,
                        &self.access,
                        &r.events,
                    )
                    .await;
                match self.write_status(r, &facts, &snap).await {
                    WriteOutcome::Written | WriteOutcome::Unchanged => failures = 0,
                    WriteOutcome::Failed => failures += 1,
                    WriteOutcome::NodeGone => {
                        warn!(node = %self.cfg.node_name, "node is gone; registering again");
                        reg = None;
                        failures += 1;
                    }
                }
            } else {
                failures += 1;
            }
            let wait = if failures == 0 {
                self.cfg.node_status_check_interval
            } else {
                super::lease::retry_delay(failures, self.cfg.node_status_check_interval)
            };
            let deadline = tokio::time::Instant::now() + wait;
            loop {
                tokio::select! {
                    _ = tokio::time::sleep_until(deadline) => break,
                    r = health_rx.changed() => if r.is_err() { return } else { break },
                    r = observed.changed() => {
                        if r.is_err() {
                            // The watch task ended (shutdown): keep ticking on the timer.
                            observed = watch::channel(ObservedNode::Unknown).1;
                            continue;
                        }
                        let obs = observed.borrow_and_update().clone();
                        if reg.as_mut().is_some_and(|r| node_replaced(&mut r.seen, r.uid.as_deref(), &obs)) {
                            warn!(node = %self.cfg.node_name, "node was deleted; registering again");
                            reg = None;
                            break;
                        }
                        if let Some(r) = reg.as_mut()
                            && let Some(n) = obs.node().filter(|n| n.metadata.uid == r.uid)
                        {
                            self.note_schedulable(r, n);
                        }
                        if reg.as_ref().is_some_and(|r| server_strayed(r, &obs)) {
                            debug!("the server's Node status differs from ours; checking now");
                            break;
                        }
                    }
                    _ = fence.changed() => break,
                    r = images.changed() => {
                        if r.is_err() {
                            // The keeper ended (shutdown): keep ticking on the timer.
                            images = watch::channel(None).1;
                            continue;
                        }
                        break;
                    }
                    r = prepull.changed() => {
                        if r.is_err() {
                            prepull = watch::channel(None).1;
                            continue;
                        }
                        break;
                    }
                    _ = shutdown.changed() => return,
                }
            }
        }
    }

    async fn facts(&self) -> HostFacts {
        let host = self.host.clone();
        let home = self.cfg.tart_home.clone();
        match tokio::task::spawn_blocking(move || HostFacts::gather(host.as_ref(), &home)).await {
            Ok(f) => f,
            Err(error) => {
                warn!(%error, "host facts task failed");
                HostFacts::gather(&crate::host::FixedHost::default(), &self.cfg.tart_home)
            }
        }
    }

    async fn probe(&self) {
        let p = probe::probe(
            self.tart.as_ref(),
            &self.cfg.tart_home,
            self.cfg.min_tart_version,
            self.cfg.api_timeout,
        )
        .await;
        let changed = self.health.snapshot().probe != p;
        if changed {
            info!(probe = ?p, "tart probe changed");
        }
        self.readiness
            .set_tart(matches!(p, super::health::TartProbe::Ok { .. }));
        self.health.set_probe(p);
    }

    fn update_gauges(&self, facts: &HostFacts, snap: &super::health::HealthSnapshot) {
        self.metrics.set_tart_version(snap.probe.version());
        if let Some(v) = facts.tart_home_volume {
            self.metrics.tart_home_free_bytes.set(v.free_bytes as i64);
        }
    }

    /// A cordon or uncordon of `node` (ours) since the last look: kubelet's event for it.
    fn note_schedulable(&self, r: &mut Registered, node: &Node) {
        let unschedulable = node
            .spec
            .as_ref()
            .and_then(|s| s.unschedulable)
            .unwrap_or(false);
        if let Some(ev) =
            schedulable_event(&self.cfg.node_name, &mut r.unschedulable, unschedulable)
        {
            info!(reason = ev.reason, "node schedulability changed");
            let publisher = r.events.clone();
            tokio::spawn(async move { publisher.publish(&ev).await });
        }
    }

    async fn register(
        &self,
        facts: &HostFacts,
        tart_version: Option<&str>,
        unavailable: &BTreeMap<String, String>,
    ) -> Option<Registered> {
        let registered = super::register(
            &self.client,
            &self.cfg,
            facts,
            tart_version,
            unavailable,
            &self.access,
        )
        .await;
        match registered {
            Ok(node) => {
                self.readiness.api_ok();
                if let Some(o) = super::owner_ref(&node) {
                    self.owner.send_if_modified(|cur| {
                        let changed = cur.as_ref() != Some(&o);
                        *cur = Some(o);
                        changed
                    });
                }
                let events = NodeEvents::new(
                    self.client.clone(),
                    &self.cfg.node_name,
                    self.cfg.api_timeout,
                    self.metrics.clone(),
                    self.access.clone(),
                );
                if !self
                    .started
                    .swap(true, std::sync::atomic::Ordering::Relaxed)
                {
                    let ev = events.clone();
                    tokio::spawn(async move {
                        ev.publish(&NodeEvent {
                            warning: false,
                            reason: "Starting",
                            message: format!(
                                "Starting tart-kubelet {}.",
                                env!("CARGO_PKG_VERSION")
                            ),
                        })
                        .await;
                    });
                }
                let mut reg = Registered {
                    events,
                    uid: node.metadata.uid.clone(),
                    seen: false,
                    labels: spec::desired_labels(&self.cfg, facts, tart_version, unavailable),
                    unavailable: unavailable.clone(),
                    previous: server_conditions(&node),
                    unschedulable: false,
                    last_written: None,
                };
                self.note_schedulable(&mut reg, &node);
                Some(reg)
            }
            Err(error) => {
                self.readiness.api_failed();
                warn!(error = %error, source = ?std::error::Error::source(&error).map(|s| s.to_string()), "node registration failed");
                None
            }
        }
    }

    async fn write_status(
        &self,
        r: &mut Registered,
        facts: &HostFacts,
        snap: &super::health::HealthSnapshot,
    ) -> WriteOutcome {
        let now = Time(Timestamp::now());
        let watched = self.observed.borrow().clone();
        let observed = if self.watch_live.get() && !matches!(watched, ObservedNode::Absent) {
            watched
        } else {
            // The watch is down or re-listing, so its copy may be stale (e.g. from before an
            // API server outage); or it shows no Node, which may predate our registration or
            // follow a deletion it showed before we looked. Read the Node to know.
            self.read_node().await
        };
        if matches!(observed, ObservedNode::Absent) {
            return WriteOutcome::NodeGone;
        }
        let server = observed
            .node()
            .filter(|n| n.metadata.uid == r.uid)
            .and_then(|n| n.status.as_ref());
        // Transitions are counted from what the server shows (e.g. Unknown -> True after an
        // outage), falling back to our own last write before the watch has shown the Node.
        let server_conditions = server.and_then(|s| s.conditions.clone());
        let previous = server_conditions.unwrap_or_else(|| r.previous.clone());
        let images = self.images.borrow().as_deref().map(node_images);
        let prepull = self.prepull.borrow().clone();
        let desired = status::desired_status(StatusInput {
            cfg: &self.cfg,
            facts,
            health: snap,
            internal_ip: &self.internal_ip,
            previous: &previous,
            now: &now,
            images: images.as_deref(),
            prepull: prepull.as_ref(),
        });
        for c in desired.conditions.iter().flatten() {
            if let Some(condition) = crate::metrics::CONDITIONS.iter().find(|n| **n == c.type_) {
                self.metrics
                    .node_condition
                    .get_or_create(&ConditionLabels { condition })
                    .set(i64::from(c.status == "True"));
            }
        }
        let reference = server.or(r.last_written.as_ref().map(|(last, _)| last));
        let since_write = r.last_written.as_ref().map(|(_, at)| at.elapsed());
        let Some(due) = write_due(
            &desired,
            reference,
            since_write,
            self.cfg.node_status_report_interval,
        ) else {
            return WriteOutcome::Unchanged;
        };
        debug!(due = due.as_str(), "writing node status");
        let api: Api<Node> = Api::all(self.client.clone());
        let patch = json!({ "status": &desired });
        let res = tokio::time::timeout(
            self.cfg.api_timeout,
            api.patch_status(
                &self.cfg.node_name,
                &PatchParams::default(),
                &Patch::Strategic(&patch),
            ),
        )
        .await;
        let outcome = match res {
            Ok(Ok(_)) => {
                self.access.ok("patch", "nodes/status");
                self.readiness.api_ok();
                if r.last_written.as_ref().is_none_or(|(last, _)| {
                    status::condition_status(last, "Ready")
                        != status::condition_status(&desired, "Ready")
                }) {
                    info!(ready = ?status::condition_status(&desired, "Ready"), "node status written");
                }
                let current = desired.conditions.clone().unwrap_or_default();
                let events = transition_events(&self.cfg.node_name, &previous, &current);
                if !events.is_empty() {
                    let publisher = r.events.clone();
                    tokio::spawn(async move {
                        for ev in &events {
                            publisher.publish(ev).await;
                        }
                    });
                }
                r.previous = current;
                r.last_written = Some((desired, Instant::now()));
                WriteOutcome::Written
            }
            Ok(Err(e)) => {
                self.metrics.api_error("node", &e);
                self.readiness.api_failed();
                if matches!(&e, kube::Error::Api(s) if s.code == 404) {
                    WriteOutcome::NodeGone
                } else {
                    self.access.failed("patch", "nodes/status", &e);
                    WriteOutcome::Failed
                }
            }
            Err(_) => {
                self.readiness.api_failed();
                self.metrics
                    .api_errors
                    .get_or_create(&crate::metrics::ApiErrorLabels {
                        resource: "node",
                        kind: "timeout",
                    })
                    .inc();
                warn!(timeout = ?self.cfg.api_timeout, "node status write timed out");
                WriteOutcome::Failed
            }
        };
        let label = if matches!(outcome, WriteOutcome::Written) {
            "ok"
        } else {
            "error"
        };
        self.metrics
            .status_updates
            .get_or_create(&OutcomeLabels { outcome: label })
            .inc();
        outcome
    }
}

impl<T: Tart> StatusLoop<T> {
    /// Our registered Node as the watch shows it, or as read when the watch is not live.
    async fn current_node(&self, r: &Registered) -> Option<Arc<Node>> {
        let watched = self.observed.borrow().clone();
        let obs = if self.watch_live.get() {
            watched
        } else {
            self.read_node().await
        };
        match obs {
            ObservedNode::Present(n) if n.metadata.uid == r.uid => Some(n),
            _ => None,
        }
    }

    /// Our Node as the server has it now; [`ObservedNode::Unknown`] when the read failed.
    async fn read_node(&self) -> ObservedNode {
        let api: Api<Node> = Api::all(self.client.clone());
        match tokio::time::timeout(self.cfg.api_timeout, api.get_opt(&self.cfg.node_name)).await {
            Ok(Ok(Some(n))) => ObservedNode::Present(Arc::new(n)),
            Ok(Ok(None)) => ObservedNode::Absent,
            Ok(Err(e)) => {
                self.metrics.api_error("node", &e);
                self.access.failed("get", "nodes", &e);
                ObservedNode::Unknown
            }
            Err(_) => ObservedNode::Unknown,
        }
    }
}

/// Whether the watch shows our registered Node (UID `uid`) gone or replaced by another
/// object. `seen` records that the watch has shown our Node, so an "absent" from a list taken
/// before we created it is not mistaken for a deletion.
fn node_replaced(seen: &mut bool, uid: Option<&str>, obs: &ObservedNode) -> bool {
    match obs {
        ObservedNode::Unknown => false,
        ObservedNode::Absent => *seen,
        ObservedNode::Present(_) if obs.uid() == uid => {
            *seen = true;
            false
        }
        ObservedNode::Present(_) => *seen,
    }
}

/// Whether the watch shows our Node with a status that differs from our last write in
/// something we own, and our last write is not too recent to check again.
fn server_strayed(r: &Registered, obs: &ObservedNode) -> bool {
    let Some((last, at)) = &r.last_written else {
        return false;
    };
    let Some(status) = obs
        .node()
        .filter(|n| n.metadata.uid == r.uid)
        .and_then(|n| n.status.as_ref())
    else {
        return false;
    };
    at.elapsed() >= EARLY_CHECK_AFTER && owned_differs(last, status)
}

enum WriteOutcome {
    Written,
    Unchanged,
    Failed,
    NodeGone,
}

fn server_conditions(node: &Node) -> Vec<NodeCondition> {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.clone())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests;
