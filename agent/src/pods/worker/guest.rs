//! The worker's guest steps: resolve what the guest reads before the clone (waiting
//! `CreateContainerConfigError` while something the Pod reads is missing), write its shares on
//! a blocking thread while `tart clone` and `tart set` run ([`GuestWrite`](super::guest_write::GuestWrite): `tart run` waits
//! for the write, so a Pod start is not held up by it), keep the volumes current while the VM
//! runs, and remove the per-VM directory with the VM.

use std::sync::Arc;

use tart::Tart;
use tracing::{info, warn};

use super::guest_write::GuestWrite;
use super::{Worker, WorkerInput};
use crate::container_logs::{
    self as logs, CollectorHandle, CollectorSpec, Fault, FaultReport, Origin, PodLogId, Source,
};
use crate::guest_contract::{model::ConfigError, prepare::prepare, status::JOB_FILE};
use crate::pods::{
    events::Occurrence,
    guest_refresh::{self as refresh, RefreshDeps, RefreshTask},
    metrics::KindLabels,
    reasons::WaitingReason,
    status::ContainerView,
};
use crate::vitals;

/// The status share's files the agent reads, in the order that numbers their events.
const GUEST_FILES: [&str; 7] = [
    "exit_code",
    "state",
    "termination-log",
    "stdout",
    "stderr",
    vitals::guest::FILE,
    JOB_FILE,
];

/// The event of a `fault` in the guest's file `name` (in the status share) in run `run`, and
/// its number: one event per file, kind of fault and run.
pub(super) fn guest_fault(run: u32, name: &str, fault: Fault) -> (u32, Occurrence) {
    // One number per file of `GUEST_FILES` in each run, and one more for any other file.
    const SLOTS: u32 = GUEST_FILES.len() as u32 + 1;
    let slot = GUEST_FILES
        .iter()
        .position(|f| *f == name)
        .unwrap_or(GUEST_FILES.len());
    let seq = run.saturating_mul(SLOTS).saturating_add(slot as u32);
    let file = format!("status/{name}");
    let occ = match fault {
        Fault::Refused(r) => Occurrence::GuestFileRefused {
            file,
            found: r.as_str(),
        },
        Fault::Skipped(bytes) => Occurrence::GuestOutputSkipped { file, bytes },
    };
    (seq, occ)
}

impl<T: Tart> Worker<T> {
    /// Resolve the guest's shares; the next tart step starts writing them ([`GuestWrite`]).
    pub(super) async fn prepare(&mut self, input: &WorkerInput) {
        let ctx = self.ctx.clone();
        let res = prepare(
            &ctx.client,
            &ctx.cfg.guest,
            &input.pod.0,
            input.alloc,
            &self.state.vm,
        )
        .await;
        match res {
            Ok(p) => {
                info!(
                    shares = p.files.share_count(),
                    api_wait_ms = p.api_wait.as_millis(),
                    "guest prepared"
                );
                // Waiting on the API server is not the agent's own time.
                self.overhead.excluded += p.api_wait;
                for (i, w) in p.warnings.into_iter().enumerate() {
                    let occ = Occurrence::from(w);
                    self.emit(input, u32::try_from(i).unwrap_or(u32::MAX), occ);
                }
                self.prov.writing = Some(GuestWrite::Resolved(Box::new(p.files)));
                self.prov.tokens = Some(p.tokens);
                self.state.facts.prepared = true;
                if matches!(
                    self.state.view.waiting_reason(),
                    Some(WaitingReason::CreateContainerConfigError)
                ) {
                    self.state.view =
                        ContainerView::waiting(WaitingReason::ContainerCreating, None);
                }
            }
            Err(e) => self.config_error(input, &e),
        }
    }

    /// Wait for the guest's files being written, if they are: their shares for `tart run`,
    /// or on a failure the container waits `CreateContainerConfigError` and the guest is
    /// prepared again after the backoff. Returns whether the guest is ready to run.
    pub(super) async fn guest_written(&mut self, input: &WorkerInput) -> bool {
        let Some(write) = self.prov.writing.take() else {
            return true;
        };
        match write.finish().await {
            Ok(shares) => {
                self.prov.shares = shares;
                true
            }
            Err(e) => {
                self.state.facts.prepared = false;
                self.config_error(input, &e);
                false
            }
        }
    }

    /// Let a write of the guest's files end before its directory is removed, so the write
    /// cannot recreate it afterwards.
    pub(super) async fn settle_guest_write(&mut self) {
        if let Some(write) = self.prov.writing.take() {
            write.settle().await;
        }
    }

    /// The container cannot be configured yet: wait `CreateContainerConfigError` with
    /// kubelet's message and event, back off, try again.
    fn config_error(&mut self, input: &WorkerInput, e: &ConfigError) {
        let backoff = self.back_off();
        let message = e.to_string();
        warn!(kind = e.kind(), %message, backoff_s = backoff.as_secs(), "container cannot be configured yet");
        self.ctx
            .metrics
            .guest_config_errors
            .get_or_create(&KindLabels { kind: e.kind() })
            .inc();
        let reason = WaitingReason::CreateContainerConfigError;
        self.state.view = ContainerView::waiting(reason, Some(message.clone()));
        self.emit(input, self.fail_seq, Occurrence::Failed { message });
    }

    /// Start keeping the running guest's volumes current.
    pub(super) fn start_refresher(&mut self, input: &WorkerInput) -> RefreshTask {
        let deps = RefreshDeps {
            client: self.ctx.client.clone(),
            settings: self.ctx.cfg.guest.clone(),
            alloc: input.alloc,
            events: self.ctx.events.clone(),
            metrics: self.ctx.metrics.clone(),
        };
        let tokens = self.prov.tokens.take();
        refresh::spawn(deps, input.pod.0.clone(), self.state.vm.clone(), tokens)
    }

    /// Start copying this run's output (the guest's stdout and stderr, `tart run`'s own) into
    /// the Pod's log, run number `restarts`. What the guest does wrong to its two files (a
    /// link or FIFO in their place, more output than the log keeps) becomes an event.
    pub(super) fn start_collector(&self, input: &WorkerInput) -> CollectorHandle {
        let spec = CollectorSpec::for_vm(
            self.ctx.cfg.pod_log_dir.clone(),
            log_id(input),
            input.container.clone(),
            self.state.facts.restarts,
            &self.ctx.cfg.guest.layout.status(&self.state.vm),
            self.run_opts().log_path,
            self.ctx.log_watch.clone(),
        );
        let (events, uid, obj) = (
            self.ctx.events.clone(),
            input.uid.clone(),
            input.obj.clone(),
        );
        let run = self.state.facts.restarts;
        let report = move |src: &Source, fault: Fault| {
            let name = src
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned());
            let (Origin::Guest, Some(name)) = (src.origin, name) else {
                return;
            };
            let (seq, occ) = guest_fault(run, &name, fault);
            events.emit(&uid, &obj, seq, occ);
        };
        let spec = CollectorSpec {
            report: Some(FaultReport(Arc::new(report))),
            ..spec
        };
        logs::spawn(spec)
    }

    /// Remove the Pod's logs (its VM is gone and it is being deleted).
    pub(super) async fn remove_logs(&self, input: &WorkerInput) {
        let (root, id) = (self.ctx.cfg.pod_log_dir.clone(), log_id(input));
        match tokio::task::spawn_blocking(move || logs::remove_pod_logs(&root, &id)).await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => warn!(%error, "cannot remove the Pod's logs"),
            Err(error) => warn!(%error, "cannot remove the Pod's logs"),
        }
    }

    /// Remove the VM's guest directory (shares, volumes, tokens).
    pub(super) async fn remove_guest_dir(&self) {
        let layout = self.ctx.cfg.guest.layout.clone();
        let vm = self.state.vm.clone();
        let res = tokio::task::spawn_blocking(move || layout.remove(&vm)).await;
        match res {
            Ok(Ok(())) => {}
            Ok(Err(error)) => warn!(%error, "cannot remove the VM's guest directory"),
            Err(error) => warn!(%error, "cannot remove the VM's guest directory"),
        }
    }
}

/// The Pod's log directory name parts.
fn log_id(input: &WorkerInput) -> PodLogId {
    PodLogId {
        namespace: input.namespace.clone(),
        name: input.obj.name.clone().unwrap_or_default(),
        uid: input.uid.clone(),
    }
}
