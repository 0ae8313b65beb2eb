//! Every way a container ends, end to end through the pure cores: the run's end → its
//! terminated state ([`ended`]) → restart or finish ([`plan`]) → the Pod's phase and reason
//! ([`desired_status`]). docs/pods.md, "How a container ends", is this table.

use k8s_openapi::jiff::Timestamp;
use tokio::time::Instant;

use super::*;
use crate::pods::{
    plan::{PodFacts, Process, RestartPolicy, VmFacts, VmStep, plan},
    reasons::WaitingReason,
    status::{ContainerView, Desired, Observation, Terminated, desired_status},
};

use AgentStop::*;
use RestartPolicy::{Always, Never, OnFailure};
use StopSignal::{Kill, Term};

fn guest(code: Option<i32>, state: &str, message: Option<&str>) -> Option<GuestEnd> {
    Some(GuestEnd {
        exit_code: code,
        state: Some(state.into()),
        message: message.map(str::to_owned),
        refused: vec![],
    })
}

/// The guest put a link where its exit code belongs; it reported `exited`.
fn tampered() -> Option<GuestEnd> {
    Some(GuestEnd {
        state: Some("exited".into()),
        refused: vec![("exit_code", crate::guest_file::Refused::Link)],
        ..GuestEnd::default()
    })
}

fn exited(code: i32) -> Option<GuestEnd> {
    guest(Some(code), "exited", None)
}

fn verdict(cause: DeathCause, disruption: Option<&'static str>) -> Option<Verdict> {
    Some(Verdict {
        cause,
        disruption,
        summary: "why".into(),
    })
}

/// The job ended by itself.
fn own(tart_code: i32, guest: Option<GuestEnd>, verdict: Option<Verdict>) -> RunEnd {
    RunEnd {
        tart_code,
        guest,
        stopped: None,
        verdict,
    }
}

/// The agent stopped the run; the guest reported `guest`.
fn stopped(why: AgentStop, signal: StopSignal, guest: Option<GuestEnd>) -> RunEnd {
    RunEnd {
        tart_code: 0,
        guest: guest.or_else(|| self::guest(None, "running", None)),
        stopped: Some((why, signal)),
        verdict: None,
    }
}

fn hook() -> AgentStop {
    PostStart {
        message: "Exec lifecycle hook ([sh -c exit 1]) for Container \"vm\" … exited with 1".into(),
    }
}

/// What the Pod says once the run ended `e` under `policy`: (phase, Pod reason, the run's
/// terminated reason, exit code, message). A restarted run is the container's `lastState`.
fn report(policy: RestartPolicy, why: Option<&AgentStop>, e: Ended) -> Row {
    let t = Terminated {
        exit_code: e.code,
        reason: e.reason,
        message: e.message.clone(),
        started_at: Timestamp::UNIX_EPOCH,
        finished_at: Timestamp::UNIX_EPOCH,
        disruption: e.disruption.clone(),
    };
    // A probe or hook kill goes through the plan; the deadline, a deletion and a final phase
    // stop the VM for good (`worker/termination.rs:stop` finishes at once).
    let agent_killed = matches!(why, Some(Liveness | Startup | PostStart { .. }));
    let finishes_at_once = why.is_some() && !agent_killed;
    let pod = PodFacts {
        has_finalizer: true,
        restart_policy: policy,
        ..PodFacts::default()
    };
    let vm = VmFacts {
        image_ready: true,
        cloned: true,
        configured: true,
        prepared: true,
        process: Process::Exited { code: e.code },
        agent_killed,
        ..VmFacts::default()
    };
    let step = plan(&pod, &vm, Instant::now()).vm;
    let (state, last) = match step {
        VmStep::Restart(_) if !finishes_at_once => (
            ContainerView::waiting(WaitingReason::CrashLoopBackOff, None),
            Some(t.clone()),
        ),
        VmStep::Finish | VmStep::Restart(_) => (ContainerView::Terminated(t.clone()), None),
        other => panic!("an exited run planned {other:?}"),
    };
    let o = Observation {
        host_ip: None,
        container: "vm".into(),
        image: "ghcr.io/a/b:1".into(),
        image_id: None,
        vm: Some("tkl-x".into()),
        state,
        last_terminated: last,
        restart_count: 0,
        pod_ip: None,
        job: None,
        readiness_gates: vec![],
    };
    let d = match why {
        Some(Deadline) => Desired::DeadlineExceeded(Box::new(o)),
        _ => Desired::from(o),
    };
    let s = desired_status(&d, None, Timestamp::UNIX_EPOCH);
    let disrupted = s
        .conditions
        .iter()
        .flatten()
        .any(|c| c.type_ == "DisruptionTarget" && c.status == "True");
    // The status of a Pod whose phase is final is never written again (`reconcile.rs`).
    let phase = match why {
        Some(PodFinished) => "unchanged".to_owned(),
        _ => s.phase.unwrap_or_default(),
    };
    Row {
        phase,
        pod_reason: s.reason,
        reason: t.reason.as_str(),
        code: t.exit_code,
        message: t.message,
        disrupted,
    }
}

#[derive(Debug, PartialEq, Eq)]
struct Row {
    phase: String,
    pod_reason: Option<String>,
    reason: &'static str,
    code: i32,
    message: Option<String>,
    disrupted: bool,
}

fn row(phase: &str, reason: &'static str, code: i32, message: Option<&str>) -> Row {
    Row {
        phase: phase.into(),
        pod_reason: None,
        reason,
        code,
        message: message.map(str::to_owned),
        disrupted: false,
    }
}

#[test]
fn every_way_a_container_ends_gives_kubelets_phase_reason_and_exit_code() {
    let hook_msg = match hook() {
        PostStart { message } => message,
        _ => unreachable!(),
    };
    let hook_msg = Some(hook_msg.as_str());
    let deadline = |r: Row| Row {
        pod_reason: Some("DeadlineExceeded".into()),
        ..r
    };
    let disrupted = |r: Row| Row {
        disrupted: true,
        ..r
    };
    let no_code = guest(None, "running", None);
    #[rustfmt::skip]
    let cases: Vec<(&str, RestartPolicy, RunEnd, Row)> = vec![
        // The job ends by itself.
        ("exit 0, Never", Never, own(0, exited(0), None), row("Succeeded", "Completed", 0, None)),
        ("exit 0, OnFailure", OnFailure, own(0, exited(0), None), row("Succeeded", "Completed", 0, None)),
        ("exit 0, Always: restarted", Always, own(0, exited(0), None), row("Running", "Completed", 0, None)),
        ("nothing to run (idle), Never", Never, own(0, guest(None, "idle", None), None), row("Succeeded", "Completed", 0, None)),
        ("adopted VM (no shares) exits 0", Never, own(0, None, None), row("Succeeded", "Completed", 0, None)),
        ("exit 3, Never", Never, own(0, guest(Some(3), "exited", Some("tests failed")), verdict(DeathCause::JobError, None)), row("Failed", "Error", 3, Some("tests failed"))),
        ("exit 3 without a message", Never, own(0, exited(3), verdict(DeathCause::JobError, None)), row("Failed", "Error", 3, Some("why"))),
        ("exit 3, OnFailure: restarted", OnFailure, own(0, exited(3), verdict(DeathCause::JobError, None)), row("Running", "Error", 3, Some("why"))),
        ("exit 3, Always: restarted", Always, own(0, exited(3), verdict(DeathCause::JobError, None)), row("Running", "Error", 3, Some("why"))),
        ("exit_code replaced by a link, Never", Never, own(0, tampered(), None), row("Failed", "Error", 1, Some("the guest put a symlink in place of status/exit_code: its exit code is unknown"))),
        // The agent stops the run.
        ("liveness kill, guest shut down, Never", Never, stopped(Liveness, Term, None), row("Failed", "Error", 143, None)),
        ("liveness kill, VM killed, Always", Always, stopped(Liveness, Kill, None), row("Running", "Error", 137, None)),
        ("liveness kill, OnFailure: restarted", OnFailure, stopped(Liveness, Term, None), row("Running", "Error", 143, None)),
        ("startup kill, Never", Never, stopped(Startup, Kill, None), row("Failed", "Error", 137, None)),
        ("liveness kill, the job's own code", Never, stopped(Liveness, Term, exited(2)), row("Failed", "Error", 2, None)),
        ("liveness kill, the job exits 0 on SIGTERM", Never, stopped(Liveness, Term, exited(0)), row("Failed", "Error", 143, None)),
        ("liveness kill keeps the job's message", Never, stopped(Liveness, Term, guest(None, "running", Some("bye"))), row("Failed", "Error", 143, Some("bye"))),
        ("postStart fails, Never", Never, stopped(hook(), Term, None), row("Failed", "Error", 143, hook_msg)),
        ("postStart fails, OnFailure: restarted", OnFailure, stopped(hook(), Term, None), row("Running", "Error", 143, hook_msg)),
        ("postStart fails, Always: restarted", Always, stopped(hook(), Kill, None), row("Running", "Error", 137, hook_msg)),
        ("active deadline", Always, stopped(Deadline, Term, None), deadline(row("Failed", "Error", 143, None))),
        ("active deadline, VM killed", OnFailure, stopped(Deadline, Kill, None), deadline(row("Failed", "Error", 137, None))),
        ("deletion", Always, stopped(Deletion, Term, None), row("Failed", "Error", 143, None)),
        ("deletion, grace ran out", Always, stopped(Deletion, Kill, None), row("Failed", "Error", 137, None)),
        ("phase already final", Always, stopped(PodFinished, Term, None), row("unchanged", "Error", 143, None)),
        // The VM dies.
        ("guest out of memory", Never, own(0, exited(137), verdict(DeathCause::OomKilled, None)), row("Failed", "OOMKilled", 137, Some("why"))),
        ("host memory pressure", Never, own(0, no_code.clone(), verdict(DeathCause::HostMemoryPressure, Some("HostMemoryPressure"))), disrupted(row("Failed", "Error", 1, Some("why\nthe guest reported no exit code; this is tart run's")))),
        ("killed from outside", Never, own(137, no_code.clone(), verdict(DeathCause::KilledFromOutside, Some("VMKilledFromOutside"))), disrupted(row("Failed", "Error", 137, Some("why\nthe guest reported no exit code; this is tart run's")))),
        ("Virtualization.framework error", Never, own(1, no_code.clone(), verdict(DeathCause::HostFault, Some("VirtualizationError"))), disrupted(row("Failed", "Error", 1, Some("why\nthe guest reported no exit code; this is tart run's")))),
        ("VM gone without an exit code", OnFailure, own(0, no_code, verdict(DeathCause::JobError, None)), row("Running", "Error", 1, Some("the guest reported no exit code; this is tart run's"))),
    ];
    for (what, policy, end, want) in cases {
        let why = end.stopped.as_ref().map(|(w, _)| w.clone());
        let got = report(policy, why.as_ref(), ended(end));
        assert_eq!(got, want, "{what}");
    }
    // Found stopped after an agent restart: the exit was not seen.
    let got = report(Never, None, unwatched());
    let want = row(
        "Failed",
        "ContainerStatusUnknown",
        137,
        Some("The VM stopped while the agent was not running"),
    );
    assert_eq!(got, want, "unwatched");
}

#[test]
fn the_stop_says_which_signal_the_job_got() {
    use tart::StopOutcome as O;
    assert_eq!(StopSignal::of(Some(O::GuestShutdown)), Some(Term));
    assert_eq!(StopSignal::of(Some(O::TartStop)), Some(Kill));
    assert_eq!(StopSignal::of(Some(O::Killed)), Some(Kill));
    assert_eq!(StopSignal::of(None), Some(Kill), "a failed stop");
    assert_eq!(
        StopSignal::of(Some(O::AlreadyStopped)),
        None,
        "the run's own end"
    );
    assert_eq!((Term.exit_code(), Kill.exit_code()), (143, 137));
}

#[test]
fn only_a_reported_non_zero_exit_is_the_jobs_own_failure() {
    let job = verdict(DeathCause::JobError, None).unwrap();
    assert!(job_failed(&job, Some(3)));
    assert!(
        !job_failed(&job, None),
        "the VM stopped without an exit code"
    );
    let oom = verdict(DeathCause::OomKilled, None).unwrap();
    assert!(!job_failed(&oom, Some(137)));
}

#[test]
fn the_guests_exit_code_wins_and_a_missing_one_is_said() {
    assert_eq!(
        job_exit(0, guest(Some(3), "exited", Some("bad")).unwrap()),
        (3, Some("bad".into()))
    );
    assert_eq!(job_exit(0, guest(None, "idle", None).unwrap()), (0, None));
    let (code, msg) = job_exit(137, guest(None, "running", None).unwrap());
    assert_eq!(code, 137);
    assert!(msg.unwrap().contains("tart run"));
}

#[test]
fn a_refused_exit_code_is_never_a_success() {
    let (code, msg) = job_exit(0, tampered().unwrap());
    assert_eq!(code, 1);
    assert_eq!(
        msg.as_deref(),
        Some("the guest put a symlink in place of status/exit_code: its exit code is unknown")
    );
    assert_eq!(job_exit(137, tampered().unwrap()).0, 137);
}

#[test]
fn exit_codes_follow_container_runtime_conventions() {
    let e = |reason, code, signal| ExitInfo {
        reason,
        code,
        signal,
    };
    assert_eq!(exit_code(&e(ExitReason::Completed, Some(0), None)), 0);
    assert_eq!(exit_code(&e(ExitReason::Failed, Some(3), None)), 3);
    assert_eq!(exit_code(&e(ExitReason::Signaled, None, Some(9))), 137);
    assert_eq!(exit_code(&e(ExitReason::Unknown, None, None)), 1);
    assert_eq!(exit_code(&e(ExitReason::Completed, None, None)), 0);
}
