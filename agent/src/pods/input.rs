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
    worker::{PodSnapshot, WorkerInput},
};
use crate::guest_contract::prepare::NodeAllocatable;

/// Our finalizer on every Pod we run; removed once the VM is gone.
pub const FINALIZER: &str = "tart.run/vm";

/// Whether the Pod's phase is already Succeeded or Failed (phases never leave those).
pub fn is_terminal(pod: &Pod) -> bool {
    matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    )
}

/// Pod facts for the plan. `node_gone`: our Node object was deleted; `without_finalizer`: the
/// agent runs as the node and never adds its finalizer; `now` decides `activeDeadlineSeconds`.
pub fn pod_facts(pod: &Pod, node_gone: bool, without_finalizer: bool, now: Timestamp) -> PodFacts {
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
pub fn deadline_left(pod: &Pod, now: Timestamp) -> Option<Duration> {
    let secs = pod.spec.as_ref()?.active_deadline_seconds?;
    let start = pod.status.as_ref()?.start_time.as_ref()?.0;
    let end = start.as_second().saturating_add(secs.max(0));
    let left = end.saturating_sub(now.as_second());
    Some(Duration::from_secs(u64::try_from(left).unwrap_or(0)))
}

/// The worker input for an admitted Pod.
pub fn worker_input(
    pod: &Arc<Pod>,
    a: &Admitted,
    facts: PodFacts,
    default_grace: Duration,
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
    }
}

fn first_container_status(pod: &Pod) -> Option<&k8s_openapi::api::core::v1::ContainerStatus> {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|c| c.first())
}

/// The Pod's reported `restartCount`.
pub fn restart_count(pod: &Pod) -> u32 {
    first_container_status(pod)
        .map(|c| u32::try_from(c.restart_count).unwrap_or(0))
        .unwrap_or(0)
}

/// Whether the Pod's status says its VM was started before (running, terminated, restarted).
pub fn started_before(pod: &Pod) -> bool {
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
pub fn running_since(pod: &Pod) -> Option<Timestamp> {
    first_container_status(pod)
        .and_then(|c| c.state.as_ref())
        .and_then(|s| s.running.as_ref())
        .and_then(|r| r.started_at.as_ref())
        .map(|t| t.0)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{
        ContainerState, ContainerStateRunning, ContainerStatus, PodStatus,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    use super::*;
    use crate::pods::{
        admission::{HostLimits, admit},
        fixtures::{UID, test_pod},
    };

    fn input(pod: &Pod) -> WorkerInput {
        let a = admit(pod, &HostLimits::UNLIMITED).unwrap();
        worker_input(
            &Arc::new(pod.clone()),
            &a,
            pod_facts(pod, false, false, Timestamp::now()),
            Duration::from_secs(30),
        )
    }

    #[test]
    fn grace_comes_from_the_deletion_then_the_spec_then_the_default() {
        assert_eq!(input(&test_pod().build()).grace, Duration::from_secs(30));
        let mut p = test_pod().build();
        p.spec.as_mut().unwrap().termination_grace_period_seconds = Some(45);
        assert_eq!(input(&p).grace, Duration::from_secs(45));
        let p = test_pod().deleting(20).build();
        assert_eq!(input(&p).grace, Duration::from_secs(20));
    }

    #[test]
    fn worker_input_carries_policy_secrets_resources_and_labels() {
        let p = test_pod()
            .image("ghcr.io/a/b:1")
            .pull_policy("Always")
            .pull_secret("regcred")
            .limit("cpu", "1500m")
            .restart_policy("Never")
            .build();
        let i = input(&p);
        assert_eq!(i.pull_policy, PullPolicy::Always);
        assert_eq!(i.pull_secrets, vec!["regcred".to_string()]);
        assert_eq!(i.resources.cpu, Some(2));
        assert_eq!(i.facts.restart_policy, RestartPolicy::Never);
        assert_eq!(i.pod_label, format!("runner_ci({UID})"));
        assert!(i.created.is_some());
    }

    #[test]
    fn pod_facts_see_finalizer_deletion_and_terminal_phase() {
        let f = pod_facts(&test_pod().build(), false, false, Timestamp::now());
        assert!(!f.has_finalizer && !f.deleting && !f.terminal);
        let f = pod_facts(
            &test_pod()
                .finalizer(FINALIZER)
                .deleting(5)
                .phase("Succeeded")
                .build(),
            true,
            false,
            Timestamp::now(),
        );
        assert!(f.has_finalizer && f.deleting && f.terminal && f.node_gone);
    }

    #[test]
    fn the_active_deadline_counts_from_the_start_time() {
        let mut p = test_pod().build();
        let start = Timestamp::from_second(1_700_000_000).unwrap();
        let at = |s: i64| Timestamp::from_second(1_700_000_000 + s).unwrap();
        assert_eq!(deadline_left(&p, at(0)), None, "no deadline");
        p.spec.as_mut().unwrap().active_deadline_seconds = Some(60);
        assert_eq!(deadline_left(&p, at(0)), None, "not started");
        p.status = Some(PodStatus {
            start_time: Some(Time(start)),
            ..PodStatus::default()
        });
        assert_eq!(deadline_left(&p, at(20)), Some(Duration::from_secs(40)));
        assert!(!pod_facts(&p, false, false, at(59)).deadline_exceeded);
        assert_eq!(deadline_left(&p, at(61)), Some(Duration::ZERO));
        assert!(pod_facts(&p, false, false, at(60)).deadline_exceeded);
    }

    #[test]
    fn a_running_pods_start_time_is_read_back_from_its_status() {
        let mut p = test_pod().build();
        assert_eq!(running_since(&p), None);
        assert!(!started_before(&p));
        let t = Timestamp::from_second(1_700_000_000).unwrap();
        p.status = Some(PodStatus {
            container_statuses: Some(vec![ContainerStatus {
                name: "vm".into(),
                restart_count: 2,
                state: Some(ContainerState {
                    running: Some(ContainerStateRunning {
                        started_at: Some(Time(t)),
                    }),
                    ..ContainerState::default()
                }),
                ..ContainerStatus::default()
            }]),
            ..PodStatus::default()
        });
        assert_eq!(running_since(&p), Some(t));
        assert!(started_before(&p));
        assert_eq!(restart_count(&p), 2);
    }
}
