//! Node events, kubelet style: `Starting` once per process, one event per condition
//! transition (`NodeReady`, `NodeNotReady`, `NodeHasDiskPressure`, ...) and per cordon or
//! uncordon (`NodeNotSchedulable`, `NodeSchedulable`), with the message
//! `Node <name> status is now: <Reason>`. Which events to send is pure
//! ([`transition_events`], [`schedulable_event`]); [`NodeEvents`] publishes them under the
//! API deadline, best effort, as core/v1 Events in `default` named `<node>.<hex nanoseconds>`
//! like kubelet's (shortened by [`crate::api::event_name`] so any valid node name gives a
//! valid event name), with the kubelet's reference (kind Node, UID = node name): that is what
//! `kubectl describe node` searches for, and API servers before 1.22 reject events.k8s.io/v1
//! events about cluster-scoped objects in `default`.

use std::time::Duration;

use k8s_openapi::{
    api::core::v1::{Event, EventSource, NodeCondition, ObjectReference},
    apimachinery::pkg::apis::meta::v1::Time,
    jiff::Timestamp,
};
use kube::{
    Api, Client,
    api::{ObjectMeta, PostParams},
};
use tracing::debug;

use super::{ApiAccess, FIELD_MANAGER};
use crate::metrics::NodeMetrics;

/// One event to publish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NodeEvent {
    /// Warning (else Normal).
    pub warning: bool,
    pub reason: &'static str,
    /// Note.
    pub message: String,
}

/// Kubelet's event reason for condition `type_` turning `status`.
fn reason(type_: &str, status: &str) -> Option<(&'static str, bool)> {
    let t = status == "True";
    Some(match type_ {
        "Ready" if t => ("NodeReady", false),
        "Ready" => ("NodeNotReady", false),
        "MemoryPressure" if t => ("NodeHasInsufficientMemory", false),
        "MemoryPressure" => ("NodeHasSufficientMemory", false),
        "DiskPressure" if t => ("NodeHasDiskPressure", false),
        "DiskPressure" => ("NodeHasNoDiskPressure", false),
        "PIDPressure" if t => ("NodeHasInsufficientPID", false),
        "PIDPressure" => ("NodeHasSufficientPID", false),
        "TartReady" if t => ("TartReady", false),
        "TartReady" => ("TartNotReady", true),
        _ => return None,
    })
}

/// Events for every condition whose status differs between `previous` and `current`
/// (a condition absent from `previous` counts as changed).
pub(crate) fn transition_events(
    node: &str,
    previous: &[NodeCondition],
    current: &[NodeCondition],
) -> Vec<NodeEvent> {
    current
        .iter()
        .filter(|c| {
            previous
                .iter()
                .find(|p| p.type_ == c.type_)
                .is_none_or(|p| p.status != c.status)
        })
        .filter_map(|c| {
            let (reason, warning) = reason(&c.type_, &c.status)?;
            let message = match (&c.type_[..], c.message.as_deref()) {
                ("TartReady", Some(m)) if warning => {
                    format!("Node {node} status is now: {reason}: {m}")
                }
                _ => format!("Node {node} status is now: {reason}"),
            };
            Some(NodeEvent {
                warning,
                reason,
                message,
            })
        })
        .collect()
}

/// Kubelet's event when the Node's `spec.unschedulable` differs from the value last seen
/// (`last`, which starts false, as kubelet's does: a Node found cordoned at start gets one
/// `NodeNotSchedulable`): `NodeNotSchedulable` on a cordon, `NodeSchedulable` on an uncordon,
/// whoever made it (an operator, or this agent's own host checks). Updates `last`.
pub(crate) fn schedulable_event(
    node: &str,
    last: &mut bool,
    unschedulable: bool,
) -> Option<NodeEvent> {
    if *last == unschedulable {
        return None;
    }
    *last = unschedulable;
    let reason = if unschedulable {
        "NodeNotSchedulable"
    } else {
        "NodeSchedulable"
    };
    Some(NodeEvent {
        warning: false,
        reason,
        message: format!("Node {node} status is now: {reason}"),
    })
}

/// Publishes node events.
#[derive(Clone)]
pub(crate) struct NodeEvents {
    api: Api<Event>,
    node: String,
    timeout: Duration,
    metrics: NodeMetrics,
    access: ApiAccess,
}

impl NodeEvents {
    /// Events about Node `name`.
    pub(crate) fn new(
        client: Client,
        name: &str,
        timeout: Duration,
        metrics: NodeMetrics,
        access: ApiAccess,
    ) -> Self {
        Self {
            api: Api::namespaced(client, "default"),
            node: name.into(),
            timeout,
            metrics,
            access,
        }
    }

    /// Publish `ev`; failures are logged and counted, never returned.
    pub(crate) async fn publish(&self, ev: &NodeEvent) {
        let event = event_object(&self.node, ev, Timestamp::now());
        let res = tokio::time::timeout(
            self.timeout,
            self.api.create(&PostParams::default(), &event),
        )
        .await;
        match res {
            Ok(Ok(_)) => {
                self.access.ok("create", "events");
                debug!(reason = ev.reason, "node event published");
            }
            Ok(Err(e)) => {
                self.metrics.api_error("event", &e);
                self.access.failed("create", "events", &e);
            }
            Err(_) => {
                self.metrics
                    .api_errors
                    .get_or_create(&crate::metrics::ApiErrorLabels {
                        resource: "event",
                        kind: "timeout",
                    })
                    .inc();
            }
        }
    }
}

/// The Event for `ev` about Node `node` at `now`.
fn event_object(node: &str, ev: &NodeEvent, now: Timestamp) -> Event {
    let suffix = format!("{:x}", now.as_nanosecond());
    let now = Time(now);
    Event {
        metadata: ObjectMeta {
            name: Some(crate::api::event_name(node, &suffix)),
            ..ObjectMeta::default()
        },
        involved_object: ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Node".into()),
            name: Some(node.into()),
            // Kubelet's convention, which `kubectl describe node` searches by: the
            // reference UID of a Node event is the node name, not the object's UID.
            uid: Some(node.into()),
            ..ObjectReference::default()
        },
        reason: Some(ev.reason.into()),
        message: Some(ev.message.clone()),
        type_: Some(if ev.warning { "Warning" } else { "Normal" }.into()),
        source: Some(EventSource {
            component: Some(FIELD_MANAGER.into()),
            host: Some(node.into()),
        }),
        first_timestamp: Some(now.clone()),
        last_timestamp: Some(now),
        count: Some(1),
        reporting_component: Some(FIELD_MANAGER.into()),
        reporting_instance: Some(node.into()),
        ..Event::default()
    }
}

#[cfg(test)]
mod tests;
