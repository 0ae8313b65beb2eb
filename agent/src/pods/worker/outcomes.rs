//! How a worker takes what happened to its VM: an exit of `tart run`, a crash-loop restart,
//! a failed provisioning step (host fault, image pull failure, a configuration the image
//! refuses, create failure) and the backoff that follows. Each sets the container view kubelet
//! would show and emits its event once per occurrence.

use std::{sync::Arc, time::Duration};

use k8s_openapi::jiff::Timestamp;
use tart::{ErrorKind, ExitInfo, ExitReason, RunningVm, StopOutcome, Tart};
use tokio::time::Instant;
use tracing::{info, warn};

use super::{Worker, WorkerInput};
use crate::container_logs::Fault;
use crate::guest_contract::status::{GuestEnd, read_end};
use crate::guest_file::GuestFile;
use crate::pods::{
    ending::{self, AgentStop, RunEnd, StopSignal, exit_code, job_failed},
    events::{Occurrence, without_error_prefix},
    metrics::ReasonLabels,
    plan::{Process, crash_backoff},
    reasons::WaitingReason,
    status::{ContainerView, Terminated},
};
use crate::vitals::death::{Ending, Verdict, host_fault_in};

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
    /// The agent asked the VM to stop for `why` and `tart stop` ended with `outcome` (`None`:
    /// it failed): the run's end, whenever it comes, is the agent's doing. A stop that finds
    /// the VM already stopped changes nothing: an earlier attempt that failed may have ended it.
    pub(super) fn stopping(&mut self, why: AgentStop, outcome: Option<StopOutcome>) {
        if let (Some(signal), Some(run)) = (StopSignal::of(outcome), &mut self.run) {
            run.stopped = Some((why, signal));
        }
    }

    /// Stop the run for `why` (`after` names it in the log) within `grace`, then take its
    /// exit, reported as the agent's doing. A failed stop still awaits the exit: a VM that
    /// will not stop is stopped again by the plan's next step (deletion) or found exited by
    /// the watch.
    pub(super) async fn kill_run(
        &mut self,
        proc: Arc<T::Vm>,
        why: AgentStop,
        after: &'static str,
        grace: Duration,
    ) {
        let tart = self.ctx.tart.clone();
        let outcome = match tart.stop(&proc, grace).await {
            Ok(o) => Some(o),
            Err(error) => {
                warn!(%error, after, "stopping the vm failed; awaiting its exit");
                None
            }
        };
        self.stopping(why, outcome);
        match tokio::time::timeout(grace + super::STOP_SLACK, proc.wait()).await {
            Ok(info) => self.on_exit(info),
            Err(_) => warn!("the vm did not exit after its stop; still waiting"),
        }
    }

    /// The `tart run` process ended.
    pub(super) fn on_exit(&mut self, info: ExitInfo) {
        let tart_code = exit_code(&info);
        let guest = self.guest_end();
        let stopped = self.run.as_mut().and_then(|r| r.stopped.take());
        let verdict = match stopped {
            Some(_) => None,
            None => self.explain_death(&info, tart_code, guest.as_ref()),
        };
        if let Some(v) = &verdict {
            let input = self.input.borrow().clone();
            let summary = v.summary.clone();
            let occ = if job_failed(v, guest.as_ref().and_then(|g| g.exit_code)) {
                Occurrence::JobFailed { summary }
            } else {
                Occurrence::VmDied {
                    reason: v.event_reason(),
                    summary,
                }
            };
            self.emit(&input, self.state.facts.restarts, occ);
        }
        let end = ending::ended(RunEnd {
            tart_code,
            guest,
            stopped,
            verdict,
        });
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
        let started_at = match (self.run_started(), &self.state.view) {
            (Some((_, t)), _) => t,
            (None, ContainerView::Running { started_at, .. }) => *started_at,
            _ => Timestamp::now(),
        };
        let code = end.code;
        info!(code, reason, "vm exited");
        self.once.run_ended();
        self.pending_exit = Some(Terminated {
            exit_code: code,
            reason: end.reason,
            message: end.message,
            started_at,
            finished_at: Timestamp::now(),
            disruption: end.disruption,
        });
        self.state.facts.process = Process::Exited { code };
        self.end_run();
        self.termination_done();
    }

    /// What the guest launcher left in the status share (with the termination message kubelet
    /// would read), when the VM has shares.
    fn guest_end(&self) -> Option<GuestEnd> {
        if !self.prov.has_status_share() {
            return None;
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
        Some(end)
    }

    /// One event and one WARN per file of the status share the guest put something else than
    /// a file in (the collector reports its own files the same way).
    fn report_refused(&self, end: &GuestEnd) {
        let input = self.input.borrow().clone();
        for (name, found) in &end.refused {
            warn!(file = %name, found = found.as_str(), "status file refused: not a regular file");
            let fault = Fault::Refused(*found);
            let (seq, occ) = super::guest::guest_fault(self.state.facts.restarts, name, fault);
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
        let fault = GuestFile::open_own(&log)
            .and_then(|f| f.read_last(RUN_LOG_TAIL))
            .ok()
            .and_then(|(t, _)| host_fault_in(&String::from_utf8_lossy(&t)));
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

    /// Count a failed provisioning attempt and block the next one for the backoff it earns,
    /// which is returned.
    pub(super) fn back_off(&mut self) -> Duration {
        self.failures += 1;
        self.fail_seq += 1;
        let backoff = crash_backoff(self.failures - 1);
        self.state.facts.blocked_until = Some(Instant::now() + backoff);
        backoff
    }

    pub(super) fn fail_with(
        &mut self,
        input: &WorkerInput,
        how: Failure,
        kind: ErrorKind,
        message: String,
    ) {
        let backoff = self.back_off();
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
