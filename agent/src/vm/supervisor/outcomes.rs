//! How a worker takes what happened to its VM: an exit of `tart run`, a crash-loop restart,
//! a failed provisioning step (host fault, image pull failure, create failure) and the backoff
//! that follows. Each sets the container view kubelet would show and emits its event once per
//! occurrence.

use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use tart::{ErrorKind, ExitInfo, ExitReason, Tart};
use tracing::{info, warn};

use super::{Worker, WorkerInput, exit_code, waiting};
use crate::pods::{
    plan::Process,
    status::{ContainerView, Terminated},
};

impl<T: Tart> Worker<T> {
    /// The `tart run` process ended.
    pub(super) fn on_exit(&mut self, info: ExitInfo) {
        let code = exit_code(&info);
        let reason = match info.reason {
            ExitReason::Completed => "completed",
            ExitReason::Failed => "failed",
            ExitReason::Signaled => "signaled",
            ExitReason::Unknown => "unknown",
        };
        self.shared
            .metrics
            .vm_exits
            .get_or_create(&crate::pods::metrics::ReasonLabels { reason })
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
            reason: Terminated::reason_for(code).into(),
            message: None,
            started_at,
            finished_at: Timestamp::now(),
        });
        self.state.facts.process = Process::Exited { code };
        self.state.facts.slot_held = false;
        self.slot = None;
        self.proc = None;
        self.run_started = None;
        self.state.pod_ip = None;
    }

    pub(super) fn restart(&mut self, input: &WorkerInput, backoff: Duration) {
        let term = self.pending_exit.take();
        self.state.last_terminated = term.or(self.state.last_terminated.take());
        self.state.facts.restarts += 1;
        self.state.facts.process = Process::None;
        self.state.facts.blocked_until = Some(std::time::Instant::now() + backoff);
        self.state.view = waiting(
            "CrashLoopBackOff",
            Some(format!(
                "back-off {}s restarting failed container={} pod={}",
                backoff.as_secs(),
                input.container,
                input.pod_label
            )),
        );
        let key = format!("backoff#{}", self.state.facts.restarts);
        let occ = crate::pods::events::Occurrence::BackOffRestart {
            container: input.container.clone(),
            pod: input.pod_label.clone(),
        };
        self.emit(input, &key, occ);
    }

    pub(super) fn finish(&mut self) {
        if let Some(t) = self.pending_exit.take() {
            self.state.view = ContainerView::Terminated(t);
        }
        self.state.facts.finished = true;
    }

    /// A provisioning step failed: classify, report, back off.
    pub(super) fn failed(&mut self, input: &WorkerInput, image_step: bool, err: &tart::Error) {
        self.fail_with(input, image_step, err.kind(), err.message.clone());
    }

    pub(super) fn fail_with(
        &mut self,
        input: &WorkerInput,
        image_step: bool,
        kind: ErrorKind,
        message: String,
    ) {
        use crate::pods::events::{Occurrence, host_fault_reason};
        self.failures += 1;
        self.fail_seq += 1;
        let backoff = crate::pods::plan::crash_backoff(self.failures - 1);
        self.state.facts.blocked_until = Some(std::time::Instant::now() + backoff);
        let n = self.fail_seq;
        warn!(kind = kind.as_str(), %message, failures = self.failures, backoff_s = backoff.as_secs(), "vm step failed");
        if kind.is_host_fault() {
            self.shared.health.record_host_fault(kind);
            self.shared.metrics.host_fault(kind);
            self.state.view = waiting(host_fault_reason(kind), Some(message.clone()));
            self.emit(
                input,
                &format!("hostfault#{n}"),
                Occurrence::HostFault { kind, message },
            );
        } else if image_step {
            self.state.view = waiting("ErrImagePull", Some(message.clone()));
            let occ = Occurrence::PullFailed {
                image: input.image.to_string(),
                error: message,
            };
            self.emit(input, &format!("pullfailed#{n}"), occ);
        } else {
            self.state.view = waiting("CreateContainerError", Some(message.clone()));
            self.emit(
                input,
                &format!("failed#{n}"),
                Occurrence::Failed { message },
            );
        }
    }

    /// Entering a backoff wait: ErrImagePull turns into ImagePullBackOff (kubelet's order).
    pub(super) fn backing_off(&mut self, input: &WorkerInput) {
        if let ContainerView::Waiting { reason, message } = &self.state.view
            && reason == "ErrImagePull"
        {
            self.state.view = waiting("ImagePullBackOff", message.clone());
            let occ = crate::pods::events::Occurrence::PullBackOff {
                image: input.image.to_string(),
            };
            self.emit(input, &format!("pullbackoff#{}", self.fail_seq), occ);
        }
    }
}
