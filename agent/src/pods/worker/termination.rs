//! The worker's side of termination: it records when it saw the deletion (the one piece of
//! state that lives for the termination, a [`TermClock`]), keeps the job's busy/idle mark
//! current from the status share, runs `preStop`, waits for a busy job within the grace period,
//! decides the stop's grace and how the termination ended, stops the VM, deletes it (and with
//! it the provisioning), and observes `pod_termination_seconds` once the VM is gone. The rules
//! are [`crate::pods::termination`].

use std::time::Duration;

use tart::{RunningVm, Tart};
use tokio::time::Instant;
use tracing::{info, warn};

use super::{Worker, WorkerInput, hooks::container_hook, lifetimes::Provisioning};
use crate::guest_contract::{job::JobActivity, status::read_job};
use crate::lifecycle::hooks::HookKind;
use crate::pods::{
    ending::AgentStop,
    events::Occurrence,
    metrics::HowLabels,
    plan::{Process, Termination},
    termination::{JOB_POLL, TermClock, TerminationHow, stop_grace, termination_how},
};

/// Delay before retrying a teardown step that failed (stop, delete): they must converge, and
/// each attempt is itself bounded by tart's deadlines.
pub(super) const TEARDOWN_RETRY: Duration = Duration::from_secs(2);

impl<T: Tart> Worker<T> {
    /// Record the deletion the first time it is seen (its grace runs from here), and read the
    /// job's mark afresh while the VM runs, so the plan decides on what the job says now.
    pub(super) fn observe_deletion(&mut self, input: &WorkerInput) {
        if !input.facts.deleting {
            return;
        }
        if self.state.facts.termination.is_none() {
            let now = Instant::now();
            self.state.facts.termination = Some(Termination {
                deadline: now + input.grace,
                pre_stopped: false,
            });
            self.term = Some(TermClock {
                started: now,
                waited: false,
                how: None,
                observed: false,
            });
        }
        if self.alive() {
            self.poll_job();
        }
    }

    /// Read the job's busy/idle mark from the status share.
    pub(super) fn poll_job(&mut self) {
        if !self.prov.has_status_share() || !self.alive() {
            return;
        }
        let status = self.ctx.cfg.guest.layout.status(&self.state.vm);
        if let Some(job) = read_job(&status) {
            if self.state.job != Some(job) {
                info!(job = ?job, "job mark");
            }
            self.state.job = Some(job);
            self.state.facts.job_busy = job.is_busy();
        }
    }

    /// The run ended: the job with it.
    pub(super) fn job_ended(&mut self) {
        if self.state.job.is_some() {
            self.state.job = Some(JobActivity::Ended);
        }
        self.state.facts.job_busy = false;
    }

    fn killing(&self, input: &WorkerInput) {
        let occ = Occurrence::Killing {
            container: input.container.clone(),
        };
        self.emit(input, 0, occ);
    }

    /// Run the `preStop` hook within what is left of the grace period; its failure is a
    /// Warning `FailedPreStopHook`, and the termination goes on.
    pub(super) async fn pre_stop(&mut self, input: &WorkerInput) {
        self.killing(input);
        self.stop_probing();
        let Some(t) = self.state.facts.termination else {
            return;
        };
        let action = container_hook(input, HookKind::PreStop);
        let left = t.deadline.saturating_duration_since(Instant::now());
        if let (Some(action), Some(proc)) = (action, self.proc())
            && !left.is_zero()
        {
            info!(
                hook = HookKind::PreStop.as_str(),
                limit_s = left.as_secs(),
                "running the hook"
            );
            tokio::select! {
                r = self.run_hook(input, action, left) => if let Err(msg) = r {
                    warn!(message = %msg, "preStop hook failed");
                    self.emit(input, 0, Occurrence::HookFailed { hook: HookKind::PreStop });
                },
                info = proc.wait() => self.on_exit(info),
            }
        }
        if let Some(t) = &mut self.state.facts.termination {
            t.pre_stopped = true;
        }
    }

    /// The job is busy: say so once, then wait until it may have changed its mark, the VM
    /// exits or the input changes, at most `left`.
    pub(super) async fn wait_for_job(&mut self, input: &WorkerInput, left: Duration) {
        self.killing(input);
        if let Some(c) = &mut self.term
            && !c.waited
        {
            c.waited = true;
            info!(
                left_s = left.as_secs(),
                "job busy; waiting for it before stopping the vm"
            );
            self.emit(input, 0, Occurrence::WaitingForJob { left });
        }
        let Some(proc) = self.proc() else {
            return;
        };
        tokio::select! {
            info = proc.wait() => self.on_exit(info),
            _ = self.input.changed() => {}
            () = tokio::time::sleep(left.min(JOB_POLL)) => {}
        }
        self.poll_job();
    }

    /// The grace `tart stop` gets. For a deletion: the rest of the grace, and how the
    /// termination ended (a job still busy is a Warning `GracePeriodExpired`, once).
    pub(super) fn stop_grace(&mut self, input: &WorkerInput) -> Duration {
        let (Some(t), Some(c)) = (self.state.facts.termination, self.term.as_mut()) else {
            return input.grace;
        };
        let how = termination_how(c.waited, self.state.facts.job_busy);
        c.how = Some(how);
        if how == TerminationHow::GraceExpired {
            warn!(
                grace_s = input.grace.as_secs(),
                "job still busy at the end of the grace period; stopping the vm"
            );
            let occ = Occurrence::GracePeriodExpired { grace: input.grace };
            self.emit(input, 0, occ);
        }
        stop_grace(t.deadline, Instant::now())
    }

    /// The VM is gone: observe the termination once, if this was one.
    pub(super) fn termination_done(&mut self) {
        let Some(c) = self.term.as_mut().filter(|c| !c.observed) else {
            return;
        };
        c.observed = true;
        let how = c.how.unwrap_or_else(|| termination_how(c.waited, false));
        let took = c.started.elapsed();
        info!(
            how = how.as_str(),
            took_s = took.as_secs_f64(),
            "pod terminated"
        );
        self.ctx
            .metrics
            .termination
            .get_or_create(&HowLabels { how: how.as_str() })
            .observe(took.as_secs_f64());
    }

    pub(super) async fn stop(&mut self, input: &WorkerInput) {
        let Some(proc) = self.proc() else {
            self.state.facts.process = Process::Exited { code: 0 };
            return;
        };
        self.stop_probing();
        self.killing(input);
        let tart = self.ctx.tart.clone();
        let grace = self.stop_grace(input);
        info!(grace_s = grace.as_secs(), "stopping vm");
        let f = &input.facts;
        let why = if f.deleting {
            AgentStop::Deletion
        } else if f.deadline_exceeded {
            AgentStop::Deadline
        } else {
            AgentStop::PodFinished
        };
        match tart.stop(&proc, grace).await {
            Ok(outcome) => {
                info!(outcome = outcome.as_str(), "vm stopped");
                self.stopping(why, Some(outcome));
                let info = tokio::time::timeout(super::STOP_SLACK, proc.wait()).await;
                let info = info.unwrap_or(tart::ExitInfo {
                    reason: tart::ExitReason::Signaled,
                    code: None,
                    signal: Some(9),
                });
                self.on_exit(info);
                self.finish();
            }
            Err(error) => {
                // The VM may still go down before the retry: that end is the agent's too.
                self.stopping(why, None);
                warn!(%error, "stop failed; retrying");
                tokio::time::sleep(TEARDOWN_RETRY).await;
            }
        }
    }

    pub(super) async fn delete(&mut self, input: &WorkerInput) {
        let tart = self.ctx.tart.clone();
        let vm = self.state.vm.clone();
        match tart.delete(&vm).await {
            Ok(()) => {
                info!("vm deleted");
                self.state.facts.cloned = false;
                self.state.facts.configured = false;
                self.state.facts.prepared = false;
                let _ = tokio::fs::remove_file(self.run_opts().log_path).await;
                self.settle_guest_write().await;
                // The provisioned VM is gone, and what lived as long as it with it.
                self.prov = Provisioning::default();
                self.remove_guest_dir().await;
                self.remove_logs(input).await;
            }
            Err(error) => {
                warn!(%error, "delete failed; retrying");
                tokio::time::sleep(TEARDOWN_RETRY).await;
            }
        }
    }
}
