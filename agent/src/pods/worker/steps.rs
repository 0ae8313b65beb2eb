//! The worker's step executors: one async fn per VM step, each bounded (tart deadlines inside
//! the tart crate, API deadlines here) and, except `run` and `stop`, cancelled by a teardown.

use std::{sync::Arc, time::Duration};

use k8s_openapi::{api::core::v1::Secret, jiff::Timestamp};
use kube::Api;
use tart::{IpResolver, RunOpts, RunningVm, SetOpts, Source, Tart};
use tokio::{sync::watch, time::Instant};
use tracing::{info, warn};

use super::{Worker, WorkerContext, WorkerInput, WorkerState, outcomes::Failure, teardown};
use crate::guest_contract::status::clear_end;
use crate::images::goldens::GoldenResult;
use crate::metrics::OutcomeLabels;
use crate::pods::{
    ending::AgentStop,
    events::Occurrence,
    image::{ImageRef, PullDecision, PullPolicy, pull_decision},
    metrics::Stage,
    plan::Process,
    pull::credentials_for,
    reasons::WaitingReason,
    status::ContainerView,
};

/// Delay before retrying a teardown step that failed (stop, delete): they must converge, and
/// each attempt is itself bounded by tart's deadlines.
const TEARDOWN_RETRY: Duration = Duration::from_secs(2);

impl<T: Tart> Worker<T> {
    pub(super) fn run_opts(&self) -> RunOpts {
        RunOpts {
            dirs: self.shares.clone(),
            ..self.ctx.cfg.run_opts(&self.state.vm)
        }
    }

    async fn credentials(&mut self, input: &WorkerInput) -> Option<tart::Credentials> {
        if self.creds.is_none() && self.ctx.cfg.read_pull_secrets && !input.pull_secrets.is_empty()
        {
            let api: Api<Secret> = Api::namespaced(self.ctx.client.clone(), &input.namespace);
            self.creds = credentials_for(
                &api,
                &input.pull_secrets,
                &input.image.host,
                self.ctx.cfg.api_timeout,
            )
            .await;
        }
        self.creds.clone()
    }

    pub(super) async fn pull(&mut self, input: &WorkerInput, out: &watch::Sender<WorkerState>) {
        let tart = self.ctx.tart.clone();
        let cache_name = input.image.cache_name();
        let cached = match input.pull_policy {
            PullPolicy::Always => false,
            _ => match tart.list().await {
                Ok(l) => l
                    .iter()
                    .any(|v| v.source == Source::Oci && v.name == cache_name),
                Err(error) => {
                    warn!(%error, "tart list failed; treating the image as not cached");
                    false
                }
            },
        };
        let n = self.fail_seq;
        match pull_decision(input.pull_policy, cached) {
            PullDecision::UseCached => {
                let occ = Occurrence::AlreadyPresent {
                    image: input.image.to_string(),
                };
                self.emit(input, n, occ);
                self.state.facts.image_ready = true;
            }
            PullDecision::NeverPullMissing => {
                let msg = format!(
                    "Container image \"{}\" is not present with pull policy of Never",
                    input.image
                );
                self.fail_with(input, Failure::Create, tart::ErrorKind::NotFound, msg);
                self.state.view = ContainerView::waiting(WaitingReason::ErrImageNeverPull, None);
                let occ = Occurrence::NeverPull {
                    image: input.image.to_string(),
                };
                self.emit(input, self.fail_seq, occ);
            }
            PullDecision::Pull => {
                let occ = Occurrence::Pulling {
                    image: input.image.to_string(),
                };
                self.emit(input, n, occ);
                self.publish(out);
                let creds = self.credentials(input).await;
                let started = Instant::now();
                let pulls = self.ctx.pulls.clone();
                // The fleet's pull token: never waited for, but pre-pulls count it.
                let token = self
                    .ctx
                    .pacer
                    .as_ref()
                    .map(|p| p.pod_pull(input.image.as_str()));
                let res = tokio::select! {
                    r = pulls.pull(tart, input.image.as_str(), creds) => r,
                    () = teardown(&mut self.input) => return,
                };
                if let (Some(t), Ok(())) = (token, &res) {
                    t.finish(started.elapsed(), input.image.cache_name());
                }
                self.ctx.metrics.stage(Stage::Pull, started.elapsed());
                match res {
                    Ok(()) => {
                        let occ = Occurrence::Pulled {
                            image: input.image.to_string(),
                            took: started.elapsed(),
                        };
                        self.emit(input, n, occ);
                        self.state.facts.image_ready = true;
                        self.state.view =
                            ContainerView::waiting(WaitingReason::ContainerCreating, None);
                    }
                    Err(f) => self.fail_with(input, Failure::Image, f.kind, f.message),
                }
            }
        }
    }

    pub(super) async fn clone_vm(&mut self, input: &WorkerInput) {
        let tart = self.ctx.tart.clone();
        let creds = self.credentials(input).await;
        let vm = self.state.vm.clone();
        let started = Instant::now();
        let res = tokio::select! {
            r = async {
                let source = clone_source(&self.ctx, &input.image, creds.clone()).await;
                let from_golden = source.is_some();
                let source = source.unwrap_or_else(|| input.image.as_str().to_owned());
                tart.clone_vm(&source, &vm, creds.as_ref()).await.map(|()| from_golden)
            } => r,
            () = teardown(&mut self.input) => return,
        };
        self.ctx.metrics.stage(Stage::Clone, started.elapsed());
        match res {
            Ok(from_golden) => {
                info!(from_golden, "vm cloned");
                self.from_golden = from_golden;
                self.state.facts.cloned = true;
                self.state.view = ContainerView::waiting(WaitingReason::ContainerCreating, None);
            }
            Err(e) => self.failed(input, Failure::Image, &e),
        }
    }

    pub(super) async fn set(&mut self, input: &WorkerInput) {
        let tart = self.ctx.tart.clone();
        let vm = self.state.vm.clone();
        let started = Instant::now();
        let r = input.resources;
        let from_golden = self.from_golden;
        let res = tokio::select! {
            r = async {
                // `--disk-size` must not shrink (§2.3): only grow past the image's disk.
                let disk = match r.disk_gb {
                    Some(want) => {
                        let have = tart.get(&vm).await?.disk_gb;
                        (u64::from(want) > have).then_some(want)
                    }
                    None => None,
                };
                let opts = SetOpts {
                    cpu: r.cpu,
                    memory_mib: r.memory_mib,
                    disk_size_gb: disk,
                    random_mac: true,
                    // Clones of one golden share its ECID; a Tart without the flag refuses it
                    // as a usage error, and the VM keeps the serial it has.
                    random_serial: from_golden,
                };
                match tart.set(&vm, &opts).await {
                    Err(e) if opts.random_serial && e.kind() == tart::ErrorKind::Usage => {
                        warn!(error = %e, "tart set refused --random-serial; keeping the clone's serial");
                        tart.set(&vm, &SetOpts { random_serial: false, ..opts }).await
                    }
                    r => r,
                }
            } => r,
            () = teardown(&mut self.input) => return,
        };
        self.ctx.metrics.stage(Stage::Set, started.elapsed());
        match res {
            Ok(()) => {
                self.state.facts.configured = true;
                // Kubelet's `Created` comes once the container exists as configured: the
                // guest's inputs were resolved before the clone, `tart set` is the last step.
                let occ = Occurrence::Created {
                    container: input.container.clone(),
                };
                self.emit(input, 0, occ);
            }
            Err(e) => self.config_refused(input, &e),
        }
    }

    pub(super) async fn wait_slot(
        &mut self,
        input: &WorkerInput,
        out: &watch::Sender<WorkerState>,
    ) {
        if let Some(g) = self.ctx.slots.try_acquire(&input.uid) {
            self.slot = Some(g);
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
        let mut changed = self.ctx.slots.changed();
        tokio::select! {
            _ = changed.changed() => {}
            () = teardown(&mut self.input) => {}
            // A safety net: a slot freed between try_acquire and subscribe is seen here.
            () = tokio::time::sleep(Duration::from_secs(5)) => {}
        }
    }

    pub(super) async fn run_vm(&mut self, input: &WorkerInput) {
        let tart = self.ctx.tart.clone();
        let vm = self.state.vm.clone();
        let opts = self.run_opts();
        if let Some(parent) = opts.log_path.parent() {
            let _ = tokio::fs::create_dir_all(parent).await;
        }
        if !self.shares.is_empty() {
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
                self.failures = 0;
                self.proc = Some(Arc::new(proc));
                self.start_refresher(input);
                self.start_collector(input);
                self.run_started = Some((started, started_ts));
                self.state.facts.process = Process::Running {
                    has_ip: false,
                    marked: false,
                };
                self.state.facts.post_started = false;
                self.state.view = ContainerView::Running {
                    started_at: started_ts,
                    // A postStart hook holds `started` back like a startup probe does.
                    started: Self::starts_unprobed(input) && !input.facts.post_start,
                    ready: false,
                };
                info!("vm started");
                let occ = Occurrence::Started {
                    container: input.container.clone(),
                };
                self.emit(input, self.state.facts.restarts, occ);
            }
            Err(e) => {
                self.ctx
                    .metrics
                    .pod_starts
                    .get_or_create(&outcome("error"))
                    .inc();
                self.slot = None;
                self.state.facts.slot_held = false;
                self.failed(input, Failure::Create, &e);
            }
        }
    }

    /// Report the VM running and ready, with its image's digest.
    pub(super) async fn mark_running(&mut self, input: &WorkerInput) {
        if self.state.image_id.is_none() {
            self.state.image_id = image_id(&*self.ctx.tart, &input.image).await;
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
        let Some(proc) = self.proc.clone() else {
            // Running without a handle cannot happen; treat as exited so the plan moves on.
            self.state.facts.process = Process::Exited { code: 1 };
            return;
        };
        let started = Instant::now();
        let wait = self.ctx.cfg.ip_wait;
        tokio::select! {
            r = tart.ip(&vm, wait, IpResolver::Dhcp) => {
                self.ctx.metrics.stage(Stage::Ip, started.elapsed());
                match r {
                    Ok(ip) => {
                        if let Some((run_at, _)) = self.run_started {
                            self.once.boot(&self.ctx.metrics, run_at.elapsed());
                        }
                        self.state.pod_ip = Some(ip);
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

    pub(super) async fn stop(&mut self, input: &WorkerInput) {
        let Some(proc) = self.proc.clone() else {
            self.state.facts.process = Process::Exited { code: 0 };
            return;
        };
        self.prober = None;
        let occ = Occurrence::Killing {
            container: input.container.clone(),
        };
        self.emit(input, 0, occ);
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

/// The image's `<host>/<repository>@sha256:<hex>`: its own digest when pinned, else the digest
/// its cached tag points at (Tart's default tag is `latest`).
async fn image_id<T: Tart>(tart: &T, image: &ImageRef) -> Option<String> {
    let digest = match &image.digest {
        Some(d) => d.clone(),
        None => {
            let tag = image.tag.as_deref().unwrap_or("latest");
            tart.cached_digest(&image.host, &image.repository, tag)
                .await?
        }
    };
    Some(format!("{}/{}@{digest}", image.host, image.repository))
}

/// Where a Pod's VM is cloned from: the golden base of its image's digest (made now if this Mac
/// has none), or `None` to clone from the image itself — when the digest is not known (the
/// image is not in the cache under its tag) or the golden cannot be made. Either way the Pod
/// gets the same image; the golden only saves the copy.
async fn clone_source<T: Tart>(
    ctx: &WorkerContext<T>,
    image: &ImageRef,
    creds: Option<tart::Credentials>,
) -> Option<String> {
    let digest = match &image.digest {
        Some(d) => Some(d.clone()),
        None => {
            let tag = image.tag.as_deref().unwrap_or("latest");
            ctx.tart
                .cached_digest(&image.host, &image.repository, tag)
                .await
        }
    }?;
    let source = format!("{}/{}@{digest}", image.host, image.repository);
    match ctx
        .goldens
        .ensure(ctx.tart.clone(), &source, &digest, creds)
        .await
    {
        Ok((golden, result)) => {
            ctx.image_metrics.golden(result);
            Some(golden.as_str().to_owned())
        }
        Err(failure) => {
            ctx.image_metrics.golden(GoldenResult::Error);
            warn!(kind = failure.kind.as_str(), message = %failure.message, "no golden base; cloning from the image");
            None
        }
    }
}
