use k8s_openapi::{api::core::v1::PodStatus, jiff::Timestamp};

use serde_json::json;

use super::*;
use crate::pods::reasons::{TerminatedReason, WaitingReason};

fn t(s: i64) -> Timestamp {
    Timestamp::from_second(s).unwrap()
}

fn obs(state: ContainerView) -> Observation {
    Observation {
        host_ip: Some("192.0.2.10".into()),
        container: "vm".into(),
        image: "ghcr.io/a/b:1".into(),
        image_id: None,
        vm: Some("tkl-x".into()),
        state,
        last_terminated: None,
        restart_count: 0,
        pod_ip: None,
        job: None,
        readiness_gates: vec![],
    }
}

fn running(ready: bool) -> ContainerView {
    ContainerView::Running {
        started_at: t(1_700_000_050),
        started: true,
        ready,
    }
}

fn as_status(v: &Value) -> PodStatus {
    serde_json::from_value(v.clone()).unwrap()
}

fn cond<'a>(v: &'a Value, ty: &str) -> &'a Value {
    v["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == ty)
        .unwrap()
}

#[test]
fn running_with_ip_is_one_of_one_ready() {
    let mut o = obs(running(true));
    o.pod_ip = Some("192.168.64.5".into());
    let v = build(&Desired::from(o), None, t(1_700_000_100));
    assert_eq!(v["phase"], "Running");
    assert_eq!(v["podIP"], "192.168.64.5");
    assert_eq!(v["hostIP"], "192.0.2.10");
    assert_eq!(cond(&v, "Ready")["status"], "True");
    assert_eq!(cond(&v, "ContainersReady")["status"], "True");
    assert_eq!(cond(&v, "Initialized")["status"], "True");
    assert_eq!(cond(&v, "PodScheduled")["status"], "True");
    let cs = &v["containerStatuses"][0];
    assert_eq!(cs["ready"], true);
    assert_eq!(cs["containerID"], "tart://tkl-x");
    assert_eq!(cs["state"]["running"]["startedAt"], "2023-11-14T22:14:10Z");
    // And it deserialises as a real PodStatus (field names are right).
    let s = as_status(&v);
    assert!(s.container_statuses.unwrap()[0].ready);
}

#[test]
fn provisioning_is_pending_container_creating_not_ready() {
    let o = obs(ContainerView::waiting(
        WaitingReason::ContainerCreating,
        None,
    ));
    let v = build(&Desired::from(o), None, t(1));
    assert_eq!(v["phase"], "Pending");
    assert_eq!(cond(&v, "Ready")["status"], "False");
    assert_eq!(cond(&v, "Ready")["reason"], "ContainersNotReady");
    assert_eq!(
        v["containerStatuses"][0]["state"]["waiting"]["reason"],
        "ContainerCreating"
    );
    assert!(v.get("podIP").is_none());
}

#[test]
fn exit_zero_is_succeeded_completed_and_non_zero_failed_error() {
    let term = |code| {
        ContainerView::Terminated(Terminated {
            exit_code: code,
            reason: TerminatedReason::for_exit(code),
            message: None,
            started_at: t(10),
            finished_at: t(20),
            disruption: None,
        })
    };
    let v = build(&Desired::from(obs(term(0))), None, t(30));
    assert_eq!(v["phase"], "Succeeded");
    let st = &v["containerStatuses"][0]["state"]["terminated"];
    assert_eq!(st["exitCode"], 0);
    assert_eq!(st["reason"], "Completed");
    assert_eq!(cond(&v, "Ready")["reason"], "PodCompleted");
    let v = build(&Desired::from(obs(term(1))), None, t(30));
    assert_eq!(v["phase"], "Failed");
    assert_eq!(
        v["containerStatuses"][0]["state"]["terminated"]["reason"],
        "Error"
    );
}

#[test]
fn crash_loop_keeps_running_phase_with_last_state_and_restart_count() {
    let mut o = obs(ContainerView::waiting(
        WaitingReason::CrashLoopBackOff,
        Some("back-off 10s restarting failed container=vm".into()),
    ));
    o.restart_count = 1;
    o.last_terminated = Some(Terminated {
        exit_code: 1,
        reason: TerminatedReason::Error,
        message: None,
        started_at: t(10),
        finished_at: t(20),
        disruption: None,
    });
    let v = build(&Desired::from(o), None, t(30));
    assert_eq!(v["phase"], "Running");
    let cs = &v["containerStatuses"][0];
    assert_eq!(cs["restartCount"], 1);
    assert_eq!(cs["lastState"]["terminated"]["exitCode"], 1);
}

#[test]
fn rejected_is_failed_with_reason_and_message() {
    let d = Desired::Rejected {
        reason: RejectReason::ContainerCount,
        message: "two".into(),
    };
    let v = build(&d, None, t(1));
    assert_eq!(
        v,
        json!({"phase": "Failed", "reason": "UnsupportedContainerCount", "message": "two"})
    );
}

#[test]
fn an_unchanged_observation_needs_no_patch_even_later() {
    let mut o = obs(running(true));
    o.pod_ip = Some("192.168.64.5".into());
    let d = Desired::from(o);
    let first = build(&d, None, t(100));
    // The server returns what we wrote plus fields it owns.
    let mut server = as_status(&first);
    server.qos_class = Some("BestEffort".into());
    let again = build(&d, Some(&server), t(5000));
    assert_eq!(again, first, "transition times must be carried over");
    assert!(!needs_patch(&again, Some(&server)));
}

#[test]
fn a_state_change_needs_a_patch_and_moves_transition_time() {
    let d1 = Desired::from(obs(running(false)));
    let server = as_status(&build(&d1, None, t(100)));
    let d2 = Desired::from(obs(running(true)));
    let v = build(&d2, Some(&server), t(200));
    assert!(needs_patch(&v, Some(&server)));
    assert_eq!(
        cond(&v, "Ready")["lastTransitionTime"],
        "1970-01-01T00:03:20Z"
    );
    assert_eq!(
        cond(&v, "PodScheduled")["lastTransitionTime"],
        "1970-01-01T00:01:40Z"
    );
}

#[test]
fn condition_order_from_the_server_does_not_matter() {
    let d = Desired::from(obs(running(true)));
    let mut server = as_status(&build(&d, None, t(100)));
    server.conditions.as_mut().unwrap().reverse();
    let v = build(&d, Some(&server), t(200));
    assert!(!needs_patch(&v, Some(&server)));
}

#[test]
fn no_current_status_always_needs_a_patch() {
    let v = build(&Desired::from(obs(running(true))), None, t(1));
    assert!(needs_patch(&v, None));
}

#[test]
fn a_true_ready_condition_carries_no_reason_and_clears_the_old_one() {
    let waiting = Desired::from(obs(ContainerView::waiting(
        WaitingReason::ContainerCreating,
        None,
    )));
    let before = build(&waiting, None, t(100));
    assert_eq!(cond(&before, "Ready")["reason"], "ContainersNotReady");
    assert_eq!(
        cond(&before, "Ready")["message"],
        "containers with unready status: [vm]"
    );
    let server = as_status(&before);
    let v = build(&Desired::from(obs(running(true))), Some(&server), t(200));
    for ty in ["Ready", "ContainersReady"] {
        let c = cond(&v, ty);
        assert_eq!(c["status"], "True");
        // null in a strategic merge patch deletes the server's stale reason and message.
        assert_eq!(
            (&c["reason"], &c["message"]),
            (&Value::Null, &Value::Null),
            "{ty}"
        );
    }
    assert!(needs_patch(&v, Some(&server)));
    // Once the server has dropped them, the same status needs no patch.
    let mut after = as_status(&v);
    for c in after.conditions.iter_mut().flatten() {
        assert!(c.reason.is_none() || c.status != "True");
    }
    after.qos_class = Some("BestEffort".into());
    assert!(!needs_patch(
        &build(&Desired::from(obs(running(true))), Some(&after), t(300)),
        Some(&after)
    ));
}

#[test]
fn a_stale_reason_on_a_true_condition_is_a_reason_to_patch() {
    let d = Desired::from(obs(running(true)));
    let mut server = as_status(&build(&d, None, t(100)));
    for c in server.conditions.iter_mut().flatten() {
        if c.type_ == "Ready" {
            c.reason = Some("ContainersNotReady".into());
        }
    }
    assert!(needs_patch(
        &build(&d, Some(&server), t(200)),
        Some(&server)
    ));
}

#[test]
fn the_job_busy_condition_keeps_its_reason_in_both_states_and_only_once_known() {
    let now = t(1_700_000_100);
    let none = build(&obs(running(true)).into(), None, now);
    assert!(
        none["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["type"] != JOB_BUSY_CONDITION),
        "no condition before the job said anything"
    );
    let busy = Observation {
        job: Some(JobActivity::Busy),
        ..obs(running(true))
    };
    let v = build(&busy.into(), None, now);
    let c = cond(&v, JOB_BUSY_CONDITION);
    assert_eq!(
        (c["status"].as_str(), c["reason"].as_str()),
        (Some("True"), Some("JobBusy"))
    );
    let current = as_status(&v);
    let idle = Observation {
        job: Some(JobActivity::Idle),
        ..obs(running(true))
    };
    let v = build(&idle.into(), Some(&current), t(1_700_000_200));
    let c = cond(&v, JOB_BUSY_CONDITION);
    assert_eq!(
        (c["status"].as_str(), c["reason"].as_str()),
        (Some("False"), Some("JobIdle"))
    );
    assert!(needs_patch(&v, Some(&current)), "busy to idle is news");
    let same = build(
        &Observation {
            job: Some(JobActivity::Busy),
            ..obs(running(true))
        }
        .into(),
        Some(&current),
        t(1_700_000_300),
    );
    assert!(!needs_patch(&same, Some(&current)), "no change, no patch");
}

#[test]
fn a_host_caused_end_sets_disruption_target_with_its_reason_and_an_oom_is_oomkilled() {
    let term = |reason, disruption| {
        ContainerView::Terminated(Terminated {
            exit_code: 137,
            reason,
            message: Some("the VM was killed from outside the agent".into()),
            started_at: t(10),
            finished_at: t(20),
            disruption,
        })
    };
    let d = Disruption {
        reason: "HostMemoryPressure",
        message: "host pressure critical".into(),
    };
    let v = build(
        &Desired::from(obs(term(TerminatedReason::Error, Some(d)))),
        None,
        t(30),
    );
    assert_eq!(v["phase"], "Failed");
    let c = cond(&v, DISRUPTION_CONDITION);
    assert_eq!(c["status"], "True");
    assert_eq!(c["reason"], "HostMemoryPressure");
    assert_eq!(c["message"], "host pressure critical");
    let v = build(
        &Desired::from(obs(term(TerminatedReason::OomKilled, None))),
        None,
        t(30),
    );
    assert_eq!(
        v["containerStatuses"][0]["state"]["terminated"]["reason"],
        "OOMKilled"
    );
    let conds = v["conditions"].as_array().unwrap();
    assert!(conds.iter().all(|c| c["type"] != DISRUPTION_CONDITION));
}

#[test]
fn ready_waits_for_every_readiness_gate_with_kubelets_reason_and_message() {
    let mut o = obs(running(true));
    o.readiness_gates = vec!["example.com/lb".into(), "example.com/db".into()];
    let with = |conds: Value| -> PodStatus {
        serde_json::from_value(json!({ "conditions": conds })).unwrap()
    };
    let now = t(1_700_000_100);
    let cases = [
        (
            json!([]),
            Some(
                "corresponding condition of pod readiness gate \"example.com/lb\" does not exist., \
                 corresponding condition of pod readiness gate \"example.com/db\" does not exist.",
            ),
        ),
        (
            json!([{"type": "example.com/lb", "status": "True"},
                   {"type": "example.com/db", "status": "False"}]),
            Some("the status of pod readiness gate \"example.com/db\" is not \"True\", but False"),
        ),
        (
            json!([{"type": "example.com/lb", "status": "True"},
                   {"type": "example.com/db", "status": "True"}]),
            None,
        ),
    ];
    for (conds, want) in cases {
        let current = with(conds);
        let v = build(&Desired::from(o.clone()), Some(&current), now);
        let ready = cond(&v, "Ready");
        assert_eq!(cond(&v, "ContainersReady")["status"], "True");
        assert_eq!(v["containerStatuses"][0]["ready"], true);
        match want {
            Some(m) => {
                assert_eq!(ready["status"], "False");
                assert_eq!(ready["reason"], "ReadinessGatesNotReady");
                assert_eq!(ready["message"], m);
            }
            None => {
                assert_eq!(ready["status"], "True");
                assert!(ready["reason"].is_null());
            }
        }
    }
    // Unready containers come first, as kubelet's.
    let mut o = obs(running(false));
    o.readiness_gates = vec!["example.com/lb".into()];
    let v = build(&Desired::from(o), None, now);
    assert_eq!(cond(&v, "Ready")["reason"], "ContainersNotReady");
}
