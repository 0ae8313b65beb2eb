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
        Ok(Default::default()),
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
