//! The worker's launcher step, between the guest's IP and reporting the container running:
//! a Pod that gives its guest a command waits until a launcher speaks for the run (a `state`
//! in the status share), after delivering the shipped one through the Tart Guest Agent as its
//! mode says (`pods::launcher`). A guest where nothing reports within the deadline ends the
//! start attempt: the VM is stopped, the container waits `GuestLauncherMissing` (or
//! `GuestLauncherFailed` when the guest agent answered but the install failed) with a Warning
//! event, and the next attempt comes after the usual backoff. The Pod is never `Running`
//! before a launcher reported, so it never shows a job that is not there.

use std::{sync::Arc, time::Duration};

use tart::{ExitInfo, RunningVm, Tart};
use tracing::{info, warn};

use super::{Worker, WorkerInput, teardown};
use crate::metrics::OutcomeLabels;
use crate::pods::{
    events::Occurrence,
    launcher::{
        self, LauncherOutcome, LauncherPlan,
        wait::{Waited, wait_for_launcher},
    },
    plan::Process,
    reasons::WaitingReason,
    status::ContainerView,
};

/// How long a guest without a launcher gets to shut down before it is powered off.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// How the wait for a launcher ended.
enum Wait {
    /// A launcher reported (`status::launcher_reported`).
    Reported(LauncherOutcome),
    /// Nothing within the deadline (the message says what was tried), or a failed install.
    NoLauncher(LauncherOutcome, String),
    /// The VM ended on its own.
    Exited(ExitInfo),
    /// The Pod is being deleted.
    Teardown,
}

impl<T: Tart> Worker<T> {
    /// What this run does about its launcher: nothing for a run adopted after an agent
    /// restart (its launcher reported before) or a VM without shares.
    pub(super) fn launcher_plan(&self, input: &WorkerInput) -> LauncherPlan {
        if self.prov.shares.is_empty() || self.run_started().is_none() {
            return LauncherPlan::None;
        }
        // Admission refused a Pod whose annotation names no mode.
        let node = self.ctx.cfg.launcher;
        let mode = launcher::mode_of(&input.pod.0, node).unwrap_or(node);
        launcher::plan(mode, launcher::runs_command(&input.pod.0))
    }

    /// The container runs: its view and `Started` event; the start succeeded, so the backoff
    /// starts over (a guest without a launcher keeps growing it).
    pub(super) fn report_started(&mut self, input: &WorkerInput) {
        self.failures = 0;
        let started_at = self
            .run_started()
            .map_or_else(k8s_openapi::jiff::Timestamp::now, |(_, t)| t);
        self.state.view = ContainerView::Running {
            started_at,
            // A postStart hook holds `started` back like a startup probe does.
            started: Self::starts_unprobed(input) && !input.facts.post_start,
            ready: false,
        };
        let occ = Occurrence::Started {
            container: input.container.clone(),
        };
        self.emit(input, self.state.facts.restarts, occ);
    }

    /// Wait for a launcher to report as `plan` says; `true` when one did and the run goes on.
    pub(super) async fn await_launcher(
        &mut self,
        input: &WorkerInput,
        plan: LauncherPlan,
        proc: Arc<T::Vm>,
    ) -> bool {
        let timeout = self.ctx.cfg.launcher_timeout;
        match self.wait_for_launcher(plan, &proc, timeout).await {
            Wait::Reported(outcome) => {
                self.count_launcher(outcome);
                if let Some((run_at, _)) = self.run_started() {
                    let labels = OutcomeLabels {
                        outcome: outcome.as_str(),
                    };
                    let secs = run_at.elapsed().as_secs_f64();
                    self.ctx
                        .metrics
                        .guest_launcher_wait
                        .get_or_create(&labels)
                        .observe(secs);
                }
                info!(launcher = outcome.as_str(), "guest launcher reported");
                self.report_started(input);
                true
            }
            Wait::NoLauncher(outcome, message) => {
                self.count_launcher(outcome);
                self.no_launcher(input, outcome, message, &proc).await;
                false
            }
            Wait::Exited(info) => {
                self.on_exit(info);
                false
            }
            Wait::Teardown => false,
        }
    }

    fn count_launcher(&self, outcome: LauncherOutcome) {
        let labels = OutcomeLabels {
            outcome: outcome.as_str(),
        };
        self.ctx
            .metrics
            .guest_launchers
            .get_or_create(&labels)
            .inc();
    }

    /// Poll the status share until a launcher reports, delivering one meanwhile as planned
    /// (`launcher::wait`), unless the VM ends or the Pod is deleted first.
    async fn wait_for_launcher(
        &mut self,
        plan: LauncherPlan,
        proc: &Arc<T::Vm>,
        timeout: Duration,
    ) -> Wait {
        let status = self.ctx.cfg.guest.layout.status(&self.state.vm);
        let (tart, vm) = (self.ctx.tart.clone(), self.state.vm.clone());
        let input = &mut self.input;
        let stop = async {
            tokio::select! {
                info = proc.wait() => Wait::Exited(info),
                () = teardown(input) => Wait::Teardown,
            }
        };
        match wait_for_launcher(&*tart, &vm, &status, plan, timeout, stop).await {
            Waited::Reported(delivered) => Wait::Reported(LauncherOutcome::reported(delivered)),
            Waited::Failed(message) => Wait::NoLauncher(LauncherOutcome::Failed, message),
            Waited::Missing(message) => Wait::NoLauncher(LauncherOutcome::Missing, message),
            Waited::Stopped(end) => end,
        }
    }

    /// No launcher: report it, stop the VM and end the run; the plan starts it again after
    /// the backoff.
    async fn no_launcher(
        &mut self,
        input: &WorkerInput,
        outcome: LauncherOutcome,
        message: String,
        proc: &Arc<T::Vm>,
    ) {
        let reason = match outcome {
            LauncherOutcome::Failed => WaitingReason::GuestLauncherFailed,
            _ => WaitingReason::GuestLauncherMissing,
        };
        let backoff = self.back_off();
        warn!(reason = reason.as_str(), %message, backoff_s = backoff.as_secs(), "no guest launcher; stopping the vm");
        let occ = Occurrence::NoLauncher {
            reason: reason.as_str(),
            message: message.clone(),
        };
        self.emit(input, self.fail_seq, occ);
        self.state.view = ContainerView::waiting(reason, Some(message));
        let tart = self.ctx.tart.clone();
        if let Err(error) = tart.stop(proc, STOP_GRACE).await {
            warn!(%error, "stopping the vm without a launcher failed; awaiting its exit");
        }
        if tokio::time::timeout(STOP_GRACE + super::STOP_SLACK, proc.wait())
            .await
            .is_err()
        {
            warn!("the vm without a launcher did not exit after its stop");
        }
        self.end_run();
        self.state.facts.process = Process::None;
    }
}
