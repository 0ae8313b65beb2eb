//! PURE: whether the Node takes new Pods, and how that is shown to the scheduler.
//!
//! A failing host check or a quarantine keeps new Pods away **without** marking the Node
//! `Ready=False`: the node lifecycle controller answers `Ready=False` with the
//! `node.kubernetes.io/not-ready:NoExecute` taint, which evicts the running VMs. Under
//! `NodeRestriction` a node may not change its own taints after registering, but it may set
//! `spec.unschedulable` (the Node authorizer grants `patch nodes` on itself, and the plugin's
//! update checks cover only taints, `configSource` and labels): the scheduler's
//! `NodeUnschedulable` filter then skips the Node, and the node lifecycle controller adds the
//! `node.kubernetes.io/unschedulable:NoSchedule` taint. The agent marks its own cordon with the
//! [`CORDON_ANNOTATION`] so it only ever lifts a cordon it set, never an operator's.

use serde_json::{Value, json};

use super::health::HealthSnapshot;

/// Annotation on the Node while the agent holds the cordon; its value is the reason.
pub(crate) const CORDON_ANNOTATION: &str = "tart.run/cordoned-by-agent";

/// Why the Node takes no new Pods.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Block {
    /// The `TartReady` reason.
    pub reason: &'static str,
    /// What was found.
    pub message: String,
}

/// The block in force, if any: failing host checks first (they name the cause), then the
/// quarantine.
pub(crate) fn block(h: &HealthSnapshot) -> Option<Block> {
    if let Some(first) = h.checks.first() {
        let message = h
            .checks
            .iter()
            .map(|f| format!("{}: {}", f.check.as_str(), f.message))
            .collect::<Vec<_>>()
            .join("; ");
        return Some(Block {
            reason: first.check.reason(),
            message: format!("the host cannot start VMs, new Pods are kept away: {message}"),
        });
    }
    h.fault.as_ref().map(|f| Block {
        reason: f.reason(),
        message: format!(
            "quarantined: {} VM start failures caused by the host ({}); new Pods are kept away for the cool-down, running VMs are left alone",
            f.count,
            f.kind.as_str()
        ),
    })
}

/// What to do with `spec.unschedulable`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CordonAction {
    /// Nothing to change.
    Keep,
    /// Set `unschedulable` and our annotation.
    Cordon,
    /// Clear `unschedulable` and our annotation.
    Uncordon,
    /// Drop our annotation only (an operator already uncordoned).
    Forget,
}

impl CordonAction {
    /// Log/label value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            CordonAction::Keep => "keep",
            CordonAction::Cordon => "cordon",
            CordonAction::Uncordon => "uncordon",
            CordonAction::Forget => "forget",
        }
    }
}

/// The action for `want` (a block is in force) given the Node's `unschedulable` and whether it
/// carries our annotation. A cordon without our annotation is an operator's: it is never
/// lifted, and never claimed.
pub(crate) fn cordon_action(want: bool, unschedulable: bool, ours: bool) -> CordonAction {
    match (want, unschedulable, ours) {
        (true, false, _) => CordonAction::Cordon,
        (true, true, _) => CordonAction::Keep,
        (false, true, true) => CordonAction::Uncordon,
        (false, false, true) => CordonAction::Forget,
        (false, _, false) => CordonAction::Keep,
    }
}

/// The merge patch for `action`, with `resource_version` as a precondition so a change an
/// operator made since the Node was read is never overwritten (the server answers 409).
pub(crate) fn cordon_patch(
    action: CordonAction,
    reason: &str,
    resource_version: Option<&str>,
) -> Option<Value> {
    let (unschedulable, annotation) = match action {
        CordonAction::Keep => return None,
        CordonAction::Cordon => (Some(true), json!(reason)),
        CordonAction::Uncordon => (Some(false), Value::Null),
        CordonAction::Forget => (None, Value::Null),
    };
    let mut patch = json!({
        "metadata": { "annotations": { CORDON_ANNOTATION: annotation } },
    });
    if let Some(rv) = resource_version {
        patch["metadata"]["resourceVersion"] = json!(rv);
    }
    if let Some(u) = unschedulable {
        patch["spec"] = json!({ "unschedulable": u });
    }
    Some(patch)
}

#[cfg(test)]
mod tests;
