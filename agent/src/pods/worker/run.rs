//! One run of the VM, from `tart run` until its process ends, and the steps that start it: take
//! a slot, run, wait for the IP, report it running. The run's state is a [`Run`]: the `tart run`
//! handle, the slot, the guest's volume refresher, the log collector, the prober and how the
//! agent stopped it. A run starts in `start_run` and ends in `end_run`, which drops it: dropping
//! it ends its tasks, so nothing of a run outlives it and nothing is cleared by hand.

use std::{sync::Arc, time::Duration};

use k8s_openapi::jiff::Timestamp;
use tart::{IpResolver, RunOpts, RunningVm, Tart};
use tokio::{sync::watch, time::Instant};
use tracing::{info, warn};

use super::{
    Worker, WorkerInput, WorkerState,
    lifetimes::{Run, pinned},
    outcomes::Failure,
    teardown,
    termination::TEARDOWN_RETRY,
};
use crate::guest_contract::status::clear_end;
use crate::metrics::OutcomeLabels;
use crate::pods::launcher::LauncherPlan;
use crate::pods::{
    events::Occurrence, metrics::Stage, plan::Process, reasons::WaitingReason,
    status::ContainerView,
};
use crate::slots::SlotGuard;

impl<T: Tart> Worker<T> {
    /// A run began: `proc` holds `slot` from now until the run ends. Its tasks are started by
    /// [`Self::serve_run`].
    pub(super) fn start_run(
        &mut self,
        proc: T::Vm,
        slot: Option<SlotGuard>,
        started: Option<(Instant, Timestamp)>,
    ) {
        let listed = self.ctx.running.started(&self.state.vm);
        self.run = Some(Run::new(proc, slot, listed, started));
    }

    /// Start the run's tasks that serve the guest for as long as it runs: its volumes kept
    /// current and its output copied into the Pod's log.
    pub(super) fn serve_run(&mut self, input: &WorkerInput) {
        let refresher = self.start_refresher(input);
        let collector = self.start_collector(input);
        if let Some(run) = &mut self.run {
            run.refresher = Some(refresher);
            run.collector = Some(collector);
        }
    }

    /// The run is over: it is dropped (which ends its tasks and frees its slot), and the state
    /// says so — no slot, no IP, the job ended with it.
    pub(super) fn end_run(&mut self) {
        self.run = None;
        self.state.facts.slot_held = false;
        self.state.pod_ip = None;
        self.job_ended();
    }

    /// Stop probing the current run: the agent is stopping it.
    pub(super) fn stop_probing(&mut self) {
        if let Some(run) = &mut self.run {
            run.prober = None;
        }
    }

    /// The current run's `tart run` process.
    pub(super) fn proc(&self) -> Option<Arc<T::Vm>> {
        self.run.as_ref().map(|r| r.proc.clone())
    }

    /// When the current run began, if this worker started it.
    pub(super) fn run_started(&self) -> Option<(Instant, Timestamp)> {
        self.run.as_ref().and_then(|r| r.started)
    }

    /// `tart run` options for this VM, with its guest's shares (and the default network:
    /// [`Self::profiled_run_opts`] gives the Pod's).
    pub(super) fn run_opts(&self) -> RunOpts {
        RunOpts {
            dirs: self.prov.shares.clone(),
            ..self.ctx.cfg.run_opts(&self.state.vm)
        }
    }

    /// `tart run` options for this VM with its Pod's VM profile; `None` while the profile is
    /// not known (the run waits for it).
    fn profiled_run_opts(&self, input: &WorkerInput) -> Option<RunOpts> {
        let profile = input.profile.as_ref().ok()?;
        Some(RunOpts {
            network: profile.network.clone(),
            root_disk: profile.root_disk,
            ..self.run_opts()
        })
    }

    /// The Pod's VM profile is not known now (its RuntimeClass is missing, or its handler is
    /// not one of this agent's profiles): say so and wait for new input, without a slot and
    /// without a VM run. Returns whether it waited.
    async fn wait_for_profile(
        &mut self,
        input: &WorkerInput,
        out: &watch::Sender<WorkerState>,
    ) -> bool {
        let Err(wait) = &input.profile else {
            return false;
        };
        let message = wait.message();
        let episode = self.state.view.waiting_message() == Some(message.as_str());
        if !episode {
            self.profile_waits += 1;
            let occ = Occurrence::SandboxFailed {
                message: message.clone(),
            };
            self.emit(input, self.profile_waits, occ);
        }
        self.state.view = ContainerView::waiting(WaitingReason::ContainerCreating, Some(message));
        self.publish(out);
        let _ = self.input.changed().await;
        true
    }

    pub(super) async fn wait_slot(
        &mut self,
        input: &WorkerInput,
        out: &watch::Sender<WorkerState>,
    ) {
        if self.wait_for_profile(input, out).await {
            return;
        }
        // Subscribed before trying, so a slot freed after the try wakes the wait below.
        let mut changed = self.ctx.slots.changed();
        if let Some(g) = self.ctx.slots.try_acquire(&input.uid) {
            self.next_slot = Some(g);
            self.state.facts.slot_held = true;
            return;
        }
        let (used, total) = (self.ctx.slots.used(), self.ctx.slots.total());
        let msg = format!("waiting for a free VM slot ({used} of {total} in use)");
        let episode = self.state.view.waiting_reason() == Some(WaitingReason::WaitingForVmSlot);
        if !episode {
            self.slot_waits += 1;
            let occ = Occurrence::WaitingForSlot { used, total };
            self.emit(input, self.slot_waits, occ);
        }
        self.state.view = ContainerView::waiting(WaitingReason::WaitingForVmSlot, Some(msg));
        self.publish(out);
        tokio::select! {
            _ = changed.changed() => {}
            () = teardown(&mut self.input) => {}
        }
    }

    pub(super) async fn run_vm(&mut self, input: &WorkerInput) {
        if !self.guest_written(input).await {
            // Backing off: the slot is free for another Pod meanwhile.
            self.next_slot = None;
            self.state.facts.slot_held = false;
            return;
        }
        let tart = self.ctx.tart.clone();
        let vm = self.state.vm.clone();
        let Some(opts) = self.profiled_run_opts(input) else {
            // The slot was taken with a profile that is unknown since: give it back and wait
            // for new input (the slot step then says why).
            self.next_slot = None;
            self.state.facts.slot_held = false;
            let _ = self.input.changed().await;
            return;
        };
        if let Some(parent) = opts.log_path.parent() {
            // In place: one `mkdir` that finds the directory, where a blocking-pool round trip
            // would wait for two thread wake-ups (docs/performance.md, "Agent overhead per
            // Pod").
            let _ = std::fs::create_dir_all(parent);
        }
        if !self.prov.shares.is_empty() {
            clear_end(&self.ctx.cfg.guest.layout.status(&vm));
        }
        let own_time = self.overhead.own_time();
        let started = Instant::now();
        let started_ts = Timestamp::now();
        // Not cancellable: a half-started detached VM must not be left behind untracked; the
        // call is bounded by the start window.
        let res = tart.run(&vm, &opts).await;
        self.ctx.metrics.stage(Stage::Run, started.elapsed());
        let outcome = |o| OutcomeLabels { outcome: o };
        match res {
            Ok(proc) => {
                if let Some(created) = input.created {
                    let delay = started_ts.duration_since(created);
                    let delay = Duration::try_from(delay).unwrap_or_default();
                    let first = self.once.provision(&self.ctx.metrics, delay);
                    if first && self.overhead.clean {
                        let secs = own_time.as_secs_f64();
                        self.ctx.metrics.agent_overhead.observe(secs);
                    }
                }
                self.ctx.health.record_vm_start_ok();
                self.ctx
                    .metrics
                    .pod_starts
                    .get_or_create(&outcome("ok"))
                    .inc();
                let slot = self.next_slot.take();
                self.start_run(proc, slot, Some((started, started_ts)));
                self.serve_run(input);
                self.state.facts.process = Process::Running {
                    has_ip: false,
                    marked: false,
                };
                self.state.facts.post_started = false;
                info!("vm started");
                if self.launcher_plan(input) == LauncherPlan::None {
                    self.report_started(input);
                } else {
                    // Running once a launcher reports (`launcher.rs`), never before.
                    self.state.view =
                        ContainerView::waiting(WaitingReason::ContainerCreating, None);
                }
            }
            Err(e) => {
                self.ctx
                    .metrics
                    .pod_starts
                    .get_or_create(&outcome("error"))
                    .inc();
                self.next_slot = None;
                self.state.facts.slot_held = false;
                self.failed(input, Failure::Create, &e);
            }
        }
    }

    /// Report the VM running and ready, with its image's digest.
    pub(super) async fn mark_running(&mut self, input: &WorkerInput) {
        if self.state.image_id.is_none() {
            let digest = self.prov.digest(&*self.ctx.tart, &input.image).await;
            self.state.image_id = digest.map(|d| pinned(&input.image, &d));
        }
        self.state.facts.process = Process::Running {
            has_ip: true,
            marked: true,
        };
        info!(ip = ?self.state.pod_ip, "vm running");
    }

    pub(super) async fn wait_ip(&mut self, input: &WorkerInput) {
        let tart = self.ctx.tart.clone();
        let vm = self.state.vm.clone();
        let Some(proc) = self.proc() else {
            // Running without a handle cannot happen; treat as exited so the plan moves on.
            self.state.facts.process = Process::Exited { code: 1 };
            return;
        };
        let started = Instant::now();
        let wait = self.ctx.cfg.ip_wait;
        // The resolver that sees a guest on the network the VM runs with; a running VM's
        // profile is kept even when its RuntimeClass goes away, so the shared NAT's `dhcp` is
        // only the answer for a VM whose profile was never known.
        let resolver = input
            .profile
            .as_ref()
            .map_or(IpResolver::Dhcp, |p| p.network.ip_resolver());
        tokio::select! {
            r = tart.ip(&vm, wait, resolver) => {
                self.ctx.metrics.stage(Stage::Ip, started.elapsed());
                match r {
                    Ok(ip) => {
                        if let Some((run_at, _)) = self.run_started() {
                            self.once.boot(&self.ctx.metrics, run_at.elapsed());
                        }
                        self.state.pod_ip = Some(ip);
                        let plan = self.launcher_plan(input);
                        if plan != LauncherPlan::None
                            && !self.await_launcher(input, plan, proc.clone()).await
                        {
                            return;
                        }
                        self.state.facts.process = Process::Running { has_ip: true, marked: false };
                        // With a postStart hook, probing starts once the hook is done.
                        if !input.facts.post_start {
                            self.start_probing(input);
                        }
                    }
                    Err(error) => {
                        warn!(%error, "no IP yet; asking again");
                        tokio::select! {
                            info = proc.wait() => self.on_exit(info),
                            () = tokio::time::sleep(TEARDOWN_RETRY) => {}
                        }
                    }
                }
            }
            info = proc.wait() => self.on_exit(info),
            () = teardown(&mut self.input) => {}
        }
    }
}
