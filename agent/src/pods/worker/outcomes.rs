//! How a worker takes what happened to its VM: an exit of `tart run`, a crash-loop restart,
//! a failed provisioning step (host fault, image pull failure, a configuration the image
//! refuses, create failure) and the backoff that follows. Each sets the container view kubelet
//! would show and emits its event once per occurrence.

use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use tart::{ErrorKind, ExitInfo, ExitReason, Tart};
use tokio::time::Instant;
use tracing::{info, warn};

use super::{Worker, WorkerInput};
use crate::pods::{
    events::{Occurrence, without_error_prefix},
    guest::status::{GuestEnd, read_end},
    metrics::ReasonLabels,
    plan::{Process, crash_backoff},
    reasons::{TerminatedReason, WaitingReason},
    status::{ContainerView, Disruption, Terminated},
};
use crate::vitals::{
    death::{DeathCause, Ending, Verdict, host_fault_in},
    guest::read_last,
};

/// The exit code a container runtime would report: the code, or 128 + signal.
pub fn exit_code(info: &ExitInfo) -> i32 {
    match (info.code, info.signal, info.reason) {
        (Some(c), _, _) => c,
        (None, Some(s), _) => 128 + s,
        (None, None, ExitReason::Completed) => 0,
        (None, None, _) => 1,
    }
}

/// How a failed provisioning step is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Failure {
    /// The image could not be pulled or cloned from the registry.
    Image,
    /// The VM cannot be configured as the Pod asks (`tart set` refused).
    Config,
    /// Creating or starting the VM failed otherwise.
    Create,
}

impl<T: Tart> Worker<T> {
    /// The `tart run` process ended.
    pub(super) fn on_exit(&mut self, info: ExitInfo) {
        let tart_code = exit_code(&info);
        let (code, message, end) = self.job_exit(tart_code);
        let verdict = self.explain_death(&info, tart_code, end.as_ref());
        let (code, term_reason, message, disruption) =
            with_verdict(code, message, verdict.as_ref());
        if let Some(v) = verdict {
            let input = self.input.borrow().clone();
            let occ = Occurrence::VmDied {
                reason: v.event_reason(),
                summary: v.summary,
            };
            self.emit(&input, self.state.facts.restarts, occ);
        }
        let reason = match info.reason {
            ExitReason::Completed => "completed",
            ExitReason::Failed => "failed",
            ExitReason::Signaled => "signaled",
            ExitReason::Unknown => "unknown",
        };
        self.ctx
            .metrics
            .vm_exits
            .get_or_create(&ReasonLabels { reason })
            .inc();
        let started_at = match (&self.run_started, &self.state.view) {
            (Some((_, t)), _) => *t,
            (None, ContainerView::Running { started_at, .. }) => *started_at,
            _ => Timestamp::now(),
        };
        info!(code, reason, "vm exited");
        self.once.run_ended();
        self.pending_exit = Some(Terminated {
            exit_code: code,
            reason: term_reason,
            message,
            started_at,
            finished_at: Timestamp::now(),
            disruption,
        });
        self.state.facts.process = Process::Exited { code };
        self.state.facts.slot_held = false;
        self.refresher = None;
        self.prober = None;
        if let Some(c) = self.collector.take() {
            // The last of the run's output is copied and the run marked ended in the
            // background: the exit is handled at once.
            tokio::spawn(c.finish());
        }
        self.slot = None;
        self.proc = None;
        self.run_started = None;
        self.state.pod_ip = None;
        self.job_ended();
        self.termination_done();
    }

    /// The job's exit code and termination message: what the guest launcher reported, else
    /// `tart run`'s code, saying so when a command ran without reporting its end; and what the
    /// status share said, when the VM has one.
    fn job_exit(&self, tart_code: i32) -> (i32, Option<String>, Option<GuestEnd>) {
        if self.shares.is_empty() {
            return (tart_code, None, None);
        }
        let input = self.input.borrow();
        let fallback = input
            .pod
            .0
            .spec
            .as_ref()
            .and_then(|s| s.containers.first())
            .and_then(|c| c.termination_message_policy.as_deref())
            == Some("FallbackToLogsOnError");
        let status = self.ctx.cfg.guest.layout.status(&self.state.vm);
        let end = read_end(&status, fallback);
        drop(input);
        self.report_refused(&end);
        let (code, message) = job_exit(tart_code, end.clone());
        (code, message, Some(end))
    }

    /// One event per file of the status share the guest put something else than a file in.
    fn report_refused(&self, end: &GuestEnd) {
        let input = self.input.borrow().clone();
        for (name, found) in &end.refused {
            let occ = Occurrence::GuestFileRefused {
                file: format!("status/{name}"),
                found: found.as_str(),
            };
            let seq = super::guest::guest_fault_seq(self.state.facts.restarts, name);
            self.emit(&input, seq, occ);
        }
    }

    /// Why the run ended abnormally, from the vitals; `None` for a clean end or one the agent
    /// caused (deletion, deadline, a failed probe or hook).
    fn explain_death(
        &self,
        info: &ExitInfo,
        tart_code: i32,
        end: Option<&GuestEnd>,
    ) -> Option<Verdict> {
        let f = self.input.borrow().facts.clone();
        if self.state.facts.agent_killed || f.deleting || f.deadline_exceeded || f.node_gone {
            return None;
        }
        let vm = &self.state.vm;
        let status = end.map(|_| self.ctx.cfg.guest.layout.status(vm));
        let log = self.ctx.cfg.vm_log_dir.join(format!("{vm}.log"));
        let fault = read_last(&log, RUN_LOG_TAIL)
            .ok()
            .and_then(|(t, _)| host_fault_in(&t));
        let ending = Ending {
            guest_exit: end.and_then(|e| e.exit_code),
            command_ran: end.is_some_and(|e| e.state.as_deref() == Some("running")),
            tart_code,
            tart_signaled: info.reason == ExitReason::Signaled,
            fault,
            guest_silent: false,
        };
        self.ctx
            .vitals
            .explain(vm.as_str(), status.as_deref(), ending)
    }

    pub(super) fn restart(&mut self, input: &WorkerInput, backoff: Duration) {
        let term = self.pending_exit.take();
        self.state.last_terminated = term.or(self.state.last_terminated.take());
        self.state.facts.restarts += 1;
        self.state.facts.agent_killed = false;
        self.state.facts.process = Process::None;
        self.state.facts.blocked_until = Some(Instant::now() + backoff);
        self.state.view = ContainerView::waiting(
            WaitingReason::CrashLoopBackOff,
            Some(format!(
                "back-off {}s restarting failed container={} pod={}",
                backoff.as_secs(),
                input.container,
                input.pod_label
            )),
        );
        let occ = Occurrence::BackOffRestart {
            container: input.container.clone(),
            pod: input.pod_label.clone(),
        };
        self.emit(input, self.state.facts.restarts, occ);
    }

    pub(super) fn finish(&mut self) {
        if let Some(t) = self.pending_exit.take() {
            self.state.view = ContainerView::Terminated(t);
        }
        self.state.facts.finished = true;
    }

    /// `tart set` refused the Pod's configuration (for example fewer CPUs than the image's
    /// minimum). A host fault is still a host fault; anything else is the Pod's configuration.
    pub(super) fn config_refused(&mut self, input: &WorkerInput, err: &tart::Error) {
        let how = if err.kind().is_host_fault() {
            Failure::Create
        } else {
            Failure::Config
        };
        self.failed(input, how, err);
    }

    /// A provisioning step failed: classify, report, back off.
    pub(super) fn failed(&mut self, input: &WorkerInput, how: Failure, err: &tart::Error) {
        self.fail_with(input, how, err.kind(), err.message.clone());
    }

    pub(super) fn fail_with(
        &mut self,
        input: &WorkerInput,
        how: Failure,
        kind: ErrorKind,
        message: String,
    ) {
        self.failures += 1;
        self.fail_seq += 1;
        let backoff = crash_backoff(self.failures - 1);
        self.state.facts.blocked_until = Some(Instant::now() + backoff);
        let n = self.fail_seq;
        let message = without_error_prefix(&message).to_owned();
        warn!(kind = kind.as_str(), %message, failures = self.failures, backoff_s = backoff.as_secs(), "vm step failed");
        if kind.is_host_fault() {
            self.ctx.health.record_host_fault(kind);
            self.ctx.metrics.host_fault(kind);
            let reason = WaitingReason::HostFault(kind);
            self.state.view = ContainerView::waiting(reason, Some(message.clone()));
            self.emit(input, n, Occurrence::HostFault { kind, message });
            return;
        }
        match how {
            Failure::Image => {
                let reason = WaitingReason::ErrImagePull;
                self.state.view = ContainerView::waiting(reason, Some(message.clone()));
                let occ = Occurrence::PullFailed {
                    image: input.image.to_string(),
                    error: message,
                };
                self.emit(input, n, occ);
            }
            Failure::Config => {
                let reason = WaitingReason::CreateContainerConfigError;
                self.state.view = ContainerView::waiting(reason, Some(message.clone()));
                self.emit(input, n, Occurrence::Failed { message });
            }
            Failure::Create => {
                let reason = WaitingReason::CreateContainerError;
                self.state.view = ContainerView::waiting(reason, Some(message.clone()));
                self.emit(input, n, Occurrence::Failed { message });
            }
        }
    }

    /// Entering a backoff wait: ErrImagePull turns into ImagePullBackOff (kubelet's order).
    pub(super) fn backing_off(&mut self, input: &WorkerInput) {
        if let ContainerView::Waiting {
            reason: WaitingReason::ErrImagePull,
            message,
        } = &self.state.view
        {
            let message = message.clone();
            self.state.view = ContainerView::waiting(WaitingReason::ImagePullBackOff, message);
            let occ = Occurrence::PullBackOff {
                image: input.image.to_string(),
            };
            self.emit(input, self.fail_seq, occ);
        }
    }
}

/// How much of the end of `tart run`'s output is searched for a host fault.
const RUN_LOG_TAIL: u64 = 4096;

/// The container's end with a death's verdict applied: `OOMKilled` for a guest out of memory,
/// the summary in front of the message, the host's part as a [`Disruption`], and a non-zero
/// code for a death whose exit code read 0 (a VM stopped under a running command). A job that
/// failed on its own and left its own termination message keeps that message alone: it is
/// the job's account of its end (the event and the log still carry the summary).
pub fn with_verdict(
    code: i32,
    message: Option<String>,
    verdict: Option<&Verdict>,
) -> (i32, TerminatedReason, Option<String>, Option<Disruption>) {
    let Some(v) = verdict else {
        return (code, TerminatedReason::for_exit(code), message, None);
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
    (code, reason, Some(text), disruption)
}

/// The exit code and message of a run whose guest reported `end` and whose `tart run` exited
/// with `tart_code`.
pub fn job_exit(tart_code: i32, end: GuestEnd) -> (i32, Option<String>) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guests_exit_code_wins_and_a_missing_one_is_said() {
        let end = |code, state: &str, msg: Option<&str>| GuestEnd {
            exit_code: code,
            state: Some(state.into()),
            message: msg.map(str::to_owned),
            refused: vec![],
        };
        assert_eq!(
            job_exit(0, end(Some(3), "exited", Some("bad"))),
            (3, Some("bad".into()))
        );
        assert_eq!(job_exit(0, end(None, "idle", None)), (0, None));
        let (code, msg) = job_exit(137, end(None, "running", None));
        assert_eq!(code, 137);
        assert!(msg.unwrap().contains("tart run"));
    }

    #[test]
    fn a_refused_exit_code_is_never_a_success() {
        let end = GuestEnd {
            state: Some("exited".into()),
            refused: vec![("exit_code", crate::guest_file::Refused::Link)],
            ..GuestEnd::default()
        };
        let (code, msg) = job_exit(0, end.clone());
        assert_eq!(code, 1);
        assert_eq!(
            msg.as_deref(),
            Some("the guest put a symlink in place of status/exit_code: its exit code is unknown")
        );
        assert_eq!(job_exit(137, end).0, 137);
    }

    #[test]
    fn a_verdict_sets_the_reason_the_message_and_the_disruption() {
        let v = |cause, disruption| Verdict {
            cause,
            disruption,
            summary: "why".into(),
        };
        let (code, reason, msg, d) = with_verdict(
            137,
            Some("own".into()),
            Some(&v(DeathCause::OomKilled, None)),
        );
        assert_eq!(
            (code, reason.as_str(), msg.as_deref(), d),
            (137, "OOMKilled", Some("why\nown"), None)
        );
        let host = v(DeathCause::HostMemoryPressure, Some("HostMemoryPressure"));
        let (code, reason, msg, d) = with_verdict(0, None, Some(&host));
        assert_eq!(
            (code, reason.as_str(), msg.as_deref()),
            (1, "Error", Some("why"))
        );
        assert_eq!(d.unwrap().reason, "HostMemoryPressure");
        let job = v(DeathCause::JobError, None);
        let (_, _, msg, _) = with_verdict(3, Some("tests failed".into()), Some(&job));
        assert_eq!(msg.as_deref(), Some("tests failed"));
        let (_, _, msg, _) = with_verdict(3, None, Some(&job));
        assert_eq!(msg.as_deref(), Some("why"));
        let (code, reason, msg, d) = with_verdict(0, None, None);
        assert_eq!(
            (code, reason.as_str(), msg, d),
            (0, "Completed", None, None)
        );
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
}
