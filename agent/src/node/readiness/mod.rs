//! Live host readiness: the host-check task (its own period, every fact gathered with a
//! deadline), the cordon that keeps new Pods away while a check fails or the Node is
//! quarantined ([`super::gate`] decides), the events on each transition and the metrics
//! `tart_kubelet_host_check_failing{check}`, `tart_kubelet_node_quarantined` and
//! `tart_kubelet_node_quarantines_total`.

use std::{collections::BTreeMap, path::PathBuf, time::Duration};

use k8s_openapi::api::core::v1::Node;
use kube::{
    Api, Client,
    api::{Patch, PatchParams},
};
use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{counter::Counter, family::Family, gauge::Gauge},
    registry::Registry,
};
use tokio::{sync::watch, time::Instant};
use tracing::{debug, info, warn};

use super::{
    ApiAccess,
    events::{NodeEvent, NodeEvents},
    gate::{self, Block, CORDON_ANNOTATION, CordonAction},
    health::{HealthSnapshot, HostHealth},
};
use crate::{
    config::VmProfiles,
    hostcheck::{self, HostCheck, profiles, source::Source},
    metrics::register,
};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct CheckLabels {
    /// [`HostCheck::as_str`].
    pub check: &'static str,
}

/// Host readiness metrics. Clones share the same series.
#[derive(Clone, Debug, Default)]
pub(crate) struct ReadinessMetrics {
    /// 1 while the check fails.
    pub host_check_failing: Family<CheckLabels, Gauge>,
    /// 1 while the Node is quarantined.
    pub node_quarantined: Gauge,
    /// Quarantines started.
    pub node_quarantines: Counter,
}

impl ReadinessMetrics {
    /// Create the metrics and register them under `tart_kubelet_`.
    pub(crate) fn register(registry: &mut Registry) -> Self {
        let m = Self::default();
        let r = registry.sub_registry_with_prefix("tart_kubelet");
        register!(r;
            "host_check_failing", "1 while a host check that decides whether a VM can start fails" => m.host_check_failing;
            "node_quarantined", "1 while repeated host-caused VM start failures keep new Pods off the Node" => m.node_quarantined;
            "node_quarantines", "Quarantines started" => m.node_quarantines;
        );
        for c in HostCheck::ALL {
            let _ = m
                .host_check_failing
                .get_or_create(&CheckLabels { check: c.as_str() });
        }
        m
    }
}

/// The host-check task's settings.
#[derive(Debug, Clone)]
pub(crate) struct HostChecks {
    /// Where the facts come from.
    pub source: Source,
    /// How often they are gathered.
    pub interval: Duration,
    /// Deadline of each gathering command.
    pub deadline: Duration,
    /// Free DHCP leases the table must keep (one per VM slot).
    pub min_free_leases: u32,
    /// The VM profiles whose networks are checked each round.
    pub profiles: VmProfiles,
    /// The configured softnet program (`softnet_program`), if any.
    pub softnet_program: Option<PathBuf>,
}

impl HostChecks {
    /// Gather, decide and publish into `health` every `interval` until `shutdown` turns true.
    pub(crate) async fn run(
        self,
        health: HostHealth,
        metrics: ReadinessMetrics,
        mut shutdown: watch::Receiver<bool>,
    ) {
        let mut failing: Vec<HostCheck> = Vec::new();
        let mut unavailable = BTreeMap::new();
        loop {
            let obs = self.source.observe(self.deadline).await;
            let failures = hostcheck::evaluate(&obs, self.min_free_leases);
            let now: Vec<HostCheck> = failures.iter().map(|f| f.check).collect();
            for f in &failures {
                if !failing.contains(&f.check) {
                    warn!(check = f.check.as_str(), message = %f.message, "host check failing");
                }
            }
            for c in failing.iter().filter(|c| !now.contains(c)) {
                info!(check = c.as_str(), "host check passing again");
            }
            for c in HostCheck::ALL {
                metrics
                    .host_check_failing
                    .get_or_create(&CheckLabels { check: c.as_str() })
                    .set(i64::from(now.contains(&c)));
            }
            failing = now;
            let profiles = self.unavailable_profiles().await;
            for (handler, why) in &profiles {
                if unavailable.get(handler) != Some(why) {
                    warn!(profile = %handler, message = %why, "VM profile unavailable");
                }
            }
            for handler in unavailable.keys().filter(|h| !profiles.contains_key(*h)) {
                info!(profile = %handler, "VM profile available again");
            }
            unavailable.clone_from(&profiles);
            health.set_checks(failures, profiles);
            tokio::select! {
                _ = tokio::time::sleep(self.interval) => {}
                _ = shutdown.changed() => return,
            }
        }
    }
}

impl HostChecks {
    /// The profiles this Mac cannot run now, by handler, with why (the softnet program and the
    /// interfaces are looked at on a blocking thread with the gathering deadline; late = not
    /// checked).
    async fn unavailable_profiles(&self) -> BTreeMap<String, String> {
        let (softnet_needed, bridged) =
            self.profiles
                .handlers()
                .fold((false, false), |(s, b), (_, p)| {
                    (
                        s || matches!(
                            p.network,
                            tart::Network::Softnet { .. } | tart::Network::Host
                        ),
                        b || matches!(p.network, tart::Network::Bridged(_)),
                    )
                });
        if !softnet_needed && !bridged {
            return BTreeMap::new();
        }
        let configured = self.softnet_program.clone();
        let macos = cfg!(target_os = "macos");
        let gather = tokio::task::spawn_blocking(move || {
            let softnet = softnet_needed
                .then(|| {
                    profiles::softnet_fact(
                        configured.as_deref(),
                        std::env::var_os("PATH").as_deref(),
                        macos,
                    )
                })
                .flatten();
            let interfaces = bridged.then(|| profiles::interfaces_fact(macos)).flatten();
            (softnet, interfaces)
        });
        let (softnet, interfaces) = match tokio::time::timeout(self.deadline, gather).await {
            Ok(Ok(facts)) => facts,
            _ => (None, None),
        };
        self.profiles
            .handlers()
            .filter_map(|(h, p)| {
                profiles::network_unavailable(&p.network, &softnet, &interfaces)
                    .map(|why| (h.to_owned(), why))
            })
            .collect()
    }
}

/// PURE bookkeeping of the last snapshot seen, so each transition gives one event and the
/// quarantine counter counts each quarantine once.
#[derive(Debug, Default)]
pub(crate) struct Transitions {
    quarantine: Option<Instant>,
    block: Option<&'static str>,
}

impl Transitions {
    /// Events for what changed since the previous call, and whether a quarantine started.
    pub(crate) fn update(&mut self, snap: &HealthSnapshot) -> (Vec<NodeEvent>, bool) {
        let mut events = Vec::new();
        let since = snap.fault.as_ref().map(|f| f.since);
        let started = since.is_some() && since != self.quarantine;
        if let (true, Some(f)) = (started, &snap.fault) {
            events.push(NodeEvent {
                warning: true,
                reason: "NodeQuarantined",
                message: format!(
                    "{} VM start failures caused by the host ({}): no new Pods until the cool-down ends or a VM starts; running VMs are left alone",
                    f.count,
                    f.kind.as_str()
                ),
            });
        }
        if since.is_none() && self.quarantine.is_some() {
            events.push(NodeEvent {
                warning: false,
                reason: "NodeQuarantineLifted",
                message:
                    "the quarantine ended: the Node takes new Pods again unless a host check fails"
                        .into(),
            });
        }
        self.quarantine = since;
        let block = gate::block(snap);
        let reason = block.as_ref().map(|b| b.reason);
        if reason != self.block {
            events.push(match &block {
                Some(b) => NodeEvent {
                    warning: true,
                    reason: "HostNotReadyForVMs",
                    message: format!("{}: {}", b.reason, b.message),
                },
                None => NodeEvent {
                    warning: false,
                    reason: "HostReadyForVMs",
                    message: "the host can start VMs again: the Node takes new Pods".into(),
                },
            });
            self.block = reason;
        }
        (events, started)
    }
}

/// The status loop's part: events and metrics on each transition, and the cordon kept in
/// line with the block.
#[derive(Debug)]
pub(crate) struct Gatekeeper {
    transitions: Transitions,
    metrics: ReadinessMetrics,
}

impl Gatekeeper {
    /// A gatekeeper that has seen nothing yet.
    pub(crate) fn new(metrics: ReadinessMetrics) -> Self {
        Self {
            transitions: Transitions::default(),
            metrics,
        }
    }

    /// One round: `node` is our Node as last seen (`None` = unknown, the cordon waits).
    pub(crate) async fn step(
        &mut self,
        snap: &HealthSnapshot,
        node: Option<&Node>,
        client: &Client,
        timeout: Duration,
        access: &ApiAccess,
        events: &NodeEvents,
    ) {
        let (out, started) = self.transitions.update(snap);
        if started {
            self.metrics.node_quarantines.inc();
        }
        self.metrics
            .node_quarantined
            .set(i64::from(snap.fault.is_some()));
        if let (Some(node), true) = (node, snap.checked) {
            let block = gate::block(snap);
            match apply_cordon(client, node, block.as_ref(), timeout, access).await {
                // Its NodeNotSchedulable / NodeSchedulable event comes from the status loop, which
                // sees every change of `spec.unschedulable`, ours and an operator's alike.
                Ok(_) => {}
                Err(Some(kube::Error::Api(s))) if s.code == 409 => {
                    debug!("node changed since read; cordon retried next round");
                }
                Err(Some(error)) => warn!(error = %error, "cordon update failed"),
                Err(None) => warn!(timeout = ?timeout, "cordon update timed out"),
            }
        }
        if !out.is_empty() {
            let publisher = events.clone();
            tokio::spawn(async move {
                for ev in &out {
                    publisher.publish(ev).await;
                }
            });
        }
    }
}

/// Bring `spec.unschedulable` in line with `block` on `node` (as last seen); returns the
/// action taken. A 409 (the Node changed since it was read) is left to the next round.
///
/// # Errors
/// The patch failed or timed out (`None` source = timeout).
pub(crate) async fn apply_cordon(
    client: &Client,
    node: &Node,
    block: Option<&Block>,
    timeout: Duration,
    access: &ApiAccess,
) -> Result<CordonAction, Option<kube::Error>> {
    let unschedulable = node
        .spec
        .as_ref()
        .and_then(|s| s.unschedulable)
        .unwrap_or(false);
    let ours = node
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(CORDON_ANNOTATION));
    let action = gate::cordon_action(block.is_some(), unschedulable, ours);
    let reason = block.map_or("", |b| b.reason);
    let Some(patch) = gate::cordon_patch(action, reason, node.metadata.resource_version.as_deref())
    else {
        return Ok(action);
    };
    let name = node.metadata.name.clone().unwrap_or_default();
    let api: Api<Node> = Api::all(client.clone());
    match tokio::time::timeout(
        timeout,
        api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)),
    )
    .await
    {
        Ok(Ok(_)) => {
            access.ok("patch", "nodes");
            info!(action = action.as_str(), reason, "node cordon updated");
            Ok(action)
        }
        Ok(Err(e)) => {
            access.failed("patch", "nodes", &e);
            Err(Some(e))
        }
        Err(_) => Err(None),
    }
}

#[cfg(test)]
mod tests;
