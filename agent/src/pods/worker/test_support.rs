//! What the worker's test modules share: a Pod's input, uids, and waits for a published state.

pub(super) use std::time::Duration;

pub(super) use tart::{ErrorKind, Op, Tart, testing::MemTart};

pub(super) use super::{outcomes::Failure, *};
pub(super) use crate::pods::{fixtures::rig, plan::RestartPolicy, reasons::WaitingReason};
pub(super) use crate::vm_name::VmNaming;

pub(super) const IMAGE: &str = "ghcr.io/cirruslabs/macos:15";

pub(super) fn input(uid: &str, policy: RestartPolicy) -> WorkerInput {
    WorkerInput {
        facts: PodFacts {
            has_finalizer: true,
            restart_policy: policy,
            ..Default::default()
        },
        uid: uid.into(),
        obj: ObjectReference::default(),
        pod_label: format!("p_ns({uid})"),
        namespace: "ns".into(),
        container: "vm".into(),
        image: ImageRef::parse(IMAGE).unwrap(),
        pull_policy: crate::pods::image::PullPolicy::IfNotPresent,
        pull_secrets: vec![],
        resources: Default::default(),
        created: Some(Timestamp::now()),
        grace: Duration::from_secs(1),
        pod: PodSnapshot(Arc::new(crate::pods::fixtures::test_pod().uid(uid).build())),
        alloc: Default::default(),
        profile: Ok(Default::default()),
    }
}

pub(super) fn uid(n: u8) -> String {
    format!("3f2c1a9e-5b7d-4e21-9a0b-c1d2e3f4a5{n:02x}")
}

/// The first published state that satisfies `pred`, within 5 s.
pub(super) async fn until(
    h: &mut WorkerHandle,
    what: &str,
    pred: impl Fn(&WorkerState) -> bool,
) -> WorkerState {
    within(h, Duration::from_secs(5), what, pred).await
}

/// The first published state that satisfies `pred`, within `limit` (virtual time on a paused
/// clock, so backoffs fit).
pub(super) async fn within(
    h: &mut WorkerHandle,
    limit: Duration,
    what: &str,
    pred: impl Fn(&WorkerState) -> bool,
) -> WorkerState {
    let r = tokio::time::timeout(limit, h.state.wait_for(|s| pred(s)))
        .await
        .map(|r| r.map(|s| s.clone()));
    match r {
        Ok(Ok(s)) => s,
        _ => panic!("{what}: state now {:?}", *h.state.borrow()),
    }
}

pub(super) fn waiting_for(s: &WorkerState, reason: WaitingReason) -> bool {
    s.view.waiting_reason() == Some(reason)
}

pub(super) fn running_with_ip(s: &WorkerState) -> bool {
    s.pod_ip.is_some() && matches!(s.facts.process, Process::Running { marked: true, .. })
}
