//! What the Pod object says, in the terms the decision core and the worker use: [`PodFacts`]
//! for [`super::plan`], [`WorkerInput`] for the worker, and what recovery reads from a Pod's
//! existing status. Pure; no I/O.

use std::{sync::Arc, time::Duration};

use k8s_openapi::{api::core::v1::Pod, jiff::Timestamp};
use kube::{Resource, ResourceExt};

use super::{
    admission::Admitted,
    image::PullPolicy,
    plan::{PodFacts, RestartPolicy},
    profile::ProfileWait,
    worker::{PodSnapshot, WorkerInput},
};
use crate::config::VmProfile;
use crate::guest_contract::prepare::NodeAllocatable;

/// Our finalizer on every Pod we run; removed once the VM is gone.
pub(crate) const FINALIZER: &str = "tart.run/vm";

/// Whether the Pod's phase is already Succeeded or Failed (phases never leave those).
pub(crate) fn is_terminal(pod: &Pod) -> bool {
    matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    )
}

/// Pod facts for the plan. `node_gone`: our Node object was deleted; `without_finalizer`: the
/// agent runs as the node and never adds its finalizer; `now` decides `activeDeadlineSeconds`.
pub(crate) fn pod_facts(
    pod: &Pod,
    node_gone: bool,
    without_finalizer: bool,
    now: Timestamp,
) -> PodFacts {
    let lifecycle = pod
        .spec
        .as_ref()
        .and_then(|s| s.containers.first())
        .and_then(|c| c.lifecycle.as_ref());
    PodFacts {
        post_start: lifecycle.is_some_and(|l| l.post_start.is_some()),
        pre_stop: lifecycle.is_some_and(|l| l.pre_stop.is_some()),
        without_finalizer,
        deadline_exceeded: deadline_left(pod, now).is_some_and(|d| d.is_zero()),
        deleting: pod.metadata.deletion_timestamp.is_some(),
        has_finalizer: pod.finalizers().iter().any(|f| f == FINALIZER),
        node_gone,
        terminal: is_terminal(pod),
        rejection: None,
        restart_policy: RestartPolicy::from_field(
            pod.spec.as_ref().and_then(|s| s.restart_policy.as_deref()),
        ),
    }
}

/// How long until `activeDeadlineSeconds` passes, counted from `status.startTime` as kubelet
/// does (zero once passed); `None` without a deadline or before the Pod has a start time.
pub(crate) fn deadline_left(pod: &Pod, now: Timestamp) -> Option<Duration> {
    let secs = pod.spec.as_ref()?.active_deadline_seconds?;
    let start = pod.status.as_ref()?.start_time.as_ref()?.0;
    let end = start.as_second().saturating_add(secs.max(0));
    let left = end.saturating_sub(now.as_second());
    Some(Duration::from_secs(u64::try_from(left).unwrap_or(0)))
}

/// The worker input for an admitted Pod, whose VM runs with `profile`.
pub(crate) fn worker_input(
    pod: &Arc<Pod>,
    a: &Admitted,
    facts: PodFacts,
    default_grace: Duration,
    profile: Result<VmProfile, ProfileWait>,
) -> WorkerInput {
    let spec = pod.spec.as_ref();
    let c = spec.and_then(|s| s.containers.first());
    let grace = pod
        .metadata
        .deletion_grace_period_seconds
        .or(spec.and_then(|s| s.termination_grace_period_seconds))
        .map(|s| Duration::from_secs(u64::try_from(s).unwrap_or(0)))
        .unwrap_or(default_grace);
    let uid = pod.uid().unwrap_or_default();
    WorkerInput {
        facts,
        obj: pod.object_ref(&()),
        pod_label: format!(
            "{}_{}({uid})",
            pod.name_any(),
            pod.namespace().unwrap_or_default()
        ),
        uid,
        namespace: pod.namespace().unwrap_or_default(),
        container: a.container.clone(),
        image: a.image.clone(),
        pull_policy: PullPolicy::from_field(
            c.and_then(|c| c.image_pull_policy.as_deref()),
            &a.image,
        ),
        pull_secrets: spec
            .and_then(|s| s.image_pull_secrets.as_ref())
            .map(|v| v.iter().map(|r| r.name.clone()).collect())
            .unwrap_or_default(),
        resources: a.resources.to_vm(),
        created: pod.metadata.creation_timestamp.as_ref().map(|t| t.0),
        grace,
        pod: PodSnapshot(pod.clone()),
        alloc: NodeAllocatable::default(),
        profile,
    }
}

fn first_container_status(pod: &Pod) -> Option<&k8s_openapi::api::core::v1::ContainerStatus> {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|c| c.first())
}

/// The Pod's reported `restartCount`.
pub(crate) fn restart_count(pod: &Pod) -> u32 {
    first_container_status(pod)
        .map(|c| u32::try_from(c.restart_count).unwrap_or(0))
        .unwrap_or(0)
}

/// Whether the Pod's status says its VM was started before (running, terminated, restarted).
pub(crate) fn started_before(pod: &Pod) -> bool {
    first_container_status(pod).is_some_and(|c| {
        c.restart_count > 0
            || c.last_state
                .as_ref()
                .is_some_and(|l| l.terminated.is_some())
            || c.state
                .as_ref()
                .is_some_and(|s| s.running.is_some() || s.terminated.is_some())
    })
}

/// When the current run started, as the Pod's status says (a VM adopted after an agent
/// restart keeps it: the VM did not restart).
pub(crate) fn running_since(pod: &Pod) -> Option<Timestamp> {
    first_container_status(pod)
        .and_then(|c| c.state.as_ref())
        .and_then(|s| s.running.as_ref())
        .and_then(|r| r.started_at.as_ref())
        .map(|t| t.0)
}

#[cfg(test)]
mod tests;
