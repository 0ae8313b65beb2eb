//! How one run of the VM ended → the container's terminated state: exit code, reason, message
//! and the host's part. The worker gathers the facts (`pods/worker/outcomes.rs`); the plan then
//! restarts or finishes on the exit code, and the status gives the phase. docs/pods.md, "How a
//! container ends", tabulates every path; `ending/tests.rs` walks them all. Pure.
//!
//! A run the agent ended itself (a failed probe or `postStart` hook, the active deadline, the
//! Pod's deletion) reports the signal the job got — 143 when the guest shut down within the
//! grace (macOS's shutdown sends SIGTERM), 137 when the VM had to be powered off or killed —
//! with reason `Error`, unless the job reported a non-zero code of its own. It never reports
//! exit 0: the run did not end by itself, and a killed run must not count as a success.

use tart::{ExitInfo, ExitReason, StopOutcome};

use super::{reasons::TerminatedReason, status::Disruption};
use crate::guest_contract::status::GuestEnd;
use crate::vitals::death::{DeathCause, Verdict};

/// Why the agent itself stopped a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AgentStop {
    /// The liveness probe failed.
    Liveness,
    /// The startup probe failed.
    Startup,
    /// The `postStart` hook failed: kubelet's text of the failure, the run's message.
    PostStart {
        /// `Exec lifecycle hook ([…]) for Container "…" in Pod "…" failed - error: …`.
        message: String,
    },
    /// `activeDeadlineSeconds` passed.
    Deadline,
    /// The Pod is being deleted.
    Deletion,
    /// The Pod's phase was already final.
    PodFinished,
}

/// What the job got when the agent stopped its VM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StopSignal {
    /// The guest shut down within the grace: macOS's shutdown sent the job SIGTERM.
    Term,
    /// The VM was powered off or killed (or its stop failed): SIGKILL's code.
    Kill,
}

impl StopSignal {
    /// From how `tart stop` went; `None` when the VM had already stopped by itself (the run's
    /// end is then its own).
    pub(crate) fn of(outcome: Option<StopOutcome>) -> Option<Self> {
        match outcome {
            Some(StopOutcome::GuestShutdown) => Some(Self::Term),
            Some(StopOutcome::TartStop | StopOutcome::Killed) | None => Some(Self::Kill),
            Some(StopOutcome::AlreadyStopped) => None,
        }
    }

    /// The exit code a container runtime reports for it: 128 + the signal.
    pub(crate) fn exit_code(self) -> i32 {
        match self {
            Self::Term => 143,
            Self::Kill => 137,
        }
    }
}

/// The exit code a container runtime would report for `tart run`: the code, or 128 + signal.
pub(crate) fn exit_code(info: &ExitInfo) -> i32 {
    match (info.code, info.signal, info.reason) {
        (Some(c), _, _) => c,
        (None, Some(s), _) => 128 + s,
        (None, None, ExitReason::Completed) => 0,
        (None, None, _) => 1,
    }
}

/// Everything known about one run's end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RunEnd {
    /// `tart run`'s exit code ([`exit_code`]).
    pub tart_code: i32,
    /// What the guest launcher left in the status share; `None` for a VM without shares (one
    /// adopted after an agent restart).
    pub guest: Option<GuestEnd>,
    /// The agent stopped the run, and what the job got.
    pub stopped: Option<(AgentStop, StopSignal)>,
    /// The vitals' verdict on an abnormal end the agent did not cause.
    pub verdict: Option<Verdict>,
}

/// The container's terminated state for one run (its times are the worker's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ended {
    /// `exitCode`.
    pub code: i32,
    /// `reason`.
    pub reason: TerminatedReason,
    /// `message`.
    pub message: Option<String>,
    /// The host ended the run: `DisruptionTarget=True` once the run is the Pod's last.
    pub disruption: Option<Disruption>,
}

/// How the run ended, in the container's terms.
pub(crate) fn ended(end: RunEnd) -> Ended {
    if let Some((why, signal)) = end.stopped {
        return agent_stopped(end.guest, why, signal);
    }
    let (code, message) = match end.guest {
        Some(g) => job_exit(end.tart_code, g),
        None => (end.tart_code, None),
    };
    with_verdict(code, message, end.verdict.as_ref())
}

/// A run the agent stopped: the job's own non-zero code if it reported one, else the signal's;
/// always `Error`. The message is the failed hook's text, else the job's own message.
fn agent_stopped(guest: Option<GuestEnd>, why: AgentStop, signal: StopSignal) -> Ended {
    let guest = guest.unwrap_or_default();
    let code = guest
        .exit_code
        .filter(|c| *c != 0)
        .unwrap_or(signal.exit_code());
    let message = match why {
        AgentStop::PostStart { message } => Some(message),
        _ => guest.message,
    };
    Ended {
        code,
        reason: TerminatedReason::Error,
        message,
        disruption: None,
    }
}

/// The container's end with a death's verdict applied: `OOMKilled` for a guest out of memory,
/// the summary in front of the message, the host's part as a [`Disruption`], and a non-zero
/// code for a death whose exit code read 0 (a VM stopped under a running command). A job that
/// failed on its own and left its own termination message keeps that message alone: it is
/// the job's account of its end (the event and the log still carry the summary).
fn with_verdict(code: i32, message: Option<String>, verdict: Option<&Verdict>) -> Ended {
    let Some(v) = verdict else {
        return Ended {
            code,
            reason: TerminatedReason::for_exit(code),
            message,
            disruption: None,
        };
    };
    let code = if code == 0 { 1 } else { code };
    let reason = if v.oom() {
        TerminatedReason::OomKilled
    } else {
        TerminatedReason::for_exit(code)
    };
    let text = match message {
        Some(m) if v.cause == DeathCause::JobError => m,
        Some(m) => format!("{}\n{m}", v.summary),
        None => v.summary.clone(),
    };
    let disruption = v.disruption.map(|reason| Disruption {
        reason,
        message: v.summary.clone(),
    });
    Ended {
        code,
        reason,
        message: Some(text),
        disruption,
    }
}

/// The exit code and message of a run whose guest reported `end` and whose `tart run` exited
/// with `tart_code`: the guest's code wins; without one, `tart run`'s, saying so when a
/// command ran.
fn job_exit(tart_code: i32, end: GuestEnd) -> (i32, Option<String>) {
    if let Some((_, found)) = end.refused.iter().find(|(f, _)| *f == "exit_code") {
        // The guest tampered with its own result: never report it as a success.
        let message = format!(
            "the guest put a {} in place of status/exit_code: its exit code is unknown",
            found.as_str()
        );
        return (if tart_code == 0 { 1 } else { tart_code }, Some(message));
    }
    match end.exit_code {
        Some(code) => (code, end.message),
        None if end.state.as_deref() == Some("idle") => (tart_code, end.message),
        None => (
            tart_code,
            Some(end.message.unwrap_or_else(|| {
                "the guest reported no exit code; this is tart run's".to_owned()
            })),
        ),
    }
}

/// Exit code reported when the end was not seen (kubelet's `ContainerStatusUnknown`).
pub(crate) const UNKNOWN_EXIT: i32 = 137;

/// A run that ended while no agent watched it (found stopped after an agent restart): its
/// exit code is unknown, reported as kubelet reports a container whose status was lost.
pub(crate) fn unwatched() -> Ended {
    Ended {
        code: UNKNOWN_EXIT,
        reason: TerminatedReason::ContainerStatusUnknown,
        message: Some("The VM stopped while the agent was not running".into()),
        disruption: None,
    }
}

/// Whether a verdict's event is the job's own failure ("The job failed: …") rather than a
/// death of its VM ("The VM died: …"): the guest reported the job's non-zero exit and nothing
/// else ended the run.
pub(crate) fn job_failed(v: &Verdict, guest_exit: Option<i32>) -> bool {
    v.cause == DeathCause::JobError && guest_exit.is_some_and(|c| c != 0)
}

#[cfg(test)]
mod tests;
