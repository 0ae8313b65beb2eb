//! The self-test's I/O: each step through the agent's own tart driver (its deadlines and
//! retries) and the guest contract ([`super::guest`]), timed, in order; after a failure or an
//! interruption the remaining steps are skipped, and the clean-up (stop, delete) always runs.

use std::{future::Future, sync::Arc, time::Duration};

use tart::{DirShare, RunOpts, RunningVm, SetOpts, Source, Tart, VmName};
use tokio::{sync::watch, time::Instant};

use super::{
    guest,
    launcher::{self, launcher_detail},
    steps::{
        Outcome, Report, Sequence, Step, check_command, check_exec, exec_argv, with_launcher_log,
    },
};
use crate::config::LauncherMode;
use crate::guest_contract::layout::GuestLayout;
use crate::images::reference::ImageRef;
use crate::pods::launcher::plan;

/// What one self-test works with.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// The image to clone: a local VM or a remote OCI reference.
    pub image: String,
    /// The VM it creates.
    pub vm: VmName,
    /// The guest path the `exec` creates and the command waits for.
    pub marker: String,
    /// The per-VM guest directories (`--guest-dir`).
    pub layout: GuestLayout,
    /// The Pod worker's `tart run` options for this VM, before its shares are added.
    pub run_opts: RunOpts,
    /// Deadline of `tart ip --wait` (`--ip-wait`).
    pub ip_wait: Duration,
    /// Where the guest launcher comes from (`--guest-launcher`).
    pub launcher: LauncherMode,
    /// Deadline of the wait for a launcher, of the `exec`, and of the command's end.
    pub guest_timeout: Duration,
    /// How long `tart stop` lets the guest shut down before killing it.
    pub stop_grace: Duration,
}

/// Why a step did not pass.
enum Failure {
    Failed(String),
    Interrupted,
}

impl From<String> for Failure {
    fn from(s: String) -> Self {
        Failure::Failed(s)
    }
}

type StepResult = Result<String, Failure>;

/// One self-test's state: what it has created so far, so the clean-up undoes exactly that.
struct Smoke<T: Tart> {
    tart: Arc<T>,
    s: Settings,
    interrupt: watch::Receiver<bool>,
    /// `tart clone` was attempted: the VM may exist.
    cloned: bool,
    /// The guest directory may exist.
    guest_made: bool,
    shares: Vec<DirShare>,
    proc: Option<T::Vm>,
    /// When `tart run` started the VM.
    run_at: Option<Instant>,
    /// An earlier step failed: the VM's `tart run` log stays for the operator to read.
    keep_log: bool,
}

/// Run every step of the self-test; `interrupt` turns `true` on Ctrl-C or SIGTERM. Returns one
/// report per step, in order.
pub(crate) async fn run<T: Tart>(
    tart: Arc<T>,
    s: Settings,
    interrupt: watch::Receiver<bool>,
    mut progress: impl FnMut(&Report),
) -> Vec<Report> {
    let mut smoke = Smoke {
        tart,
        s,
        interrupt,
        cloned: false,
        guest_made: false,
        shares: vec![],
        proc: None,
        run_at: None,
        keep_log: false,
    };
    let mut reports = Vec::with_capacity(Step::ALL.len());
    let mut sequence = Sequence::default();
    for step in Step::ALL {
        if let Some(skipped) = sequence.skip(step) {
            progress(&skipped);
            reports.push(skipped);
            continue;
        }
        smoke.keep_log = sequence.halted();
        let started = Instant::now();
        let res = smoke.step(step).await;
        let (outcome, detail) = match res {
            Ok(detail) => (Outcome::Ok, detail),
            Err(Failure::Failed(detail)) => (Outcome::Failed, detail),
            Err(Failure::Interrupted) => (Outcome::Interrupted, "interrupted".to_owned()),
        };
        sequence.ended(step, outcome);
        let report = Report {
            step,
            outcome,
            took: started.elapsed(),
            detail,
        };
        progress(&report);
        reports.push(report);
    }
    reports
}

impl<T: Tart> Smoke<T> {
    async fn step(&mut self, step: Step) -> StepResult {
        match step {
            Step::Image => self.image().await,
            Step::Clone => self.clone_vm().await,
            Step::Set => self.set().await,
            Step::Guest => self.guest().await,
            Step::Boot => self.boot().await,
            Step::Launcher => self.launcher().await,
            Step::Exec => self.exec().await,
            Step::Command => self.command().await,
            Step::Stop => self.stop().await,
            Step::Delete => self.delete().await,
        }
    }

    /// `fut`, unless an interruption comes first (a sender gone without one interrupts
    /// nothing).
    async fn cancellable<R>(&self, fut: impl Future<Output = R>) -> Result<R, Failure> {
        let mut rx = self.interrupt.clone();
        tokio::select! {
            r = fut => Ok(r),
            Ok(_) = rx.wait_for(|v| *v) => Err(Failure::Interrupted),
        }
    }

    /// The tart call `fut` (`tart <what>`), unless an interruption comes first.
    async fn call<R>(
        &self,
        what: &str,
        fut: impl Future<Output = tart::Result<R>>,
    ) -> Result<R, Failure> {
        self.cancellable(fut)
            .await?
            .map_err(|e| Failure::Failed(format!("tart {what}: {e}")))
    }

    fn interrupted(&self) -> bool {
        *self.interrupt.borrow()
    }

    /// Present as a local VM or in the OCI cache, else pulled (and left in the cache, where
    /// the agent's own pull would put it).
    async fn image(&mut self) -> StepResult {
        let tart = self.tart.clone();
        let image = self.s.image.clone();
        let listed = self.call("list", tart.list()).await?;
        if listed
            .iter()
            .any(|v| v.source == Source::Local && v.name == image)
        {
            return Ok("a local VM".to_owned());
        }
        let r = ImageRef::parse(&image).map_err(|e| format!("not a local VM, and {e}"))?;
        let cache_name = r.cache_name();
        if listed
            .iter()
            .any(|v| v.source == Source::Oci && v.name == cache_name)
        {
            return Ok(format!("in the cache as {cache_name}"));
        }
        self.call("pull", tart.pull(&image, None)).await?;
        Ok("pulled; left in the cache".to_owned())
    }

    async fn clone_vm(&mut self) -> StepResult {
        let tart = self.tart.clone();
        self.cloned = true;
        let (image, vm) = (self.s.image.clone(), self.s.vm.clone());
        self.call("clone", tart.clone_vm(&image, &vm, None)).await?;
        Ok(format!("cloned into {vm}"))
    }

    /// As the Pod worker sets a clone with no resources asked: a new MAC address.
    async fn set(&mut self) -> StepResult {
        let tart = self.tart.clone();
        let vm = self.s.vm.clone();
        let opts = SetOpts {
            random_mac: true,
            ..SetOpts::default()
        };
        self.call("set", tart.set(&vm, &opts)).await?;
        Ok("random MAC address".to_owned())
    }

    async fn guest(&mut self) -> StepResult {
        self.guest_made = true;
        let (layout, vm, marker) = (
            self.s.layout.clone(),
            self.s.vm.clone(),
            self.s.marker.clone(),
        );
        let dir = layout.vm_dir(&vm);
        let what = format!("writing {}", dir.display());
        self.shares = blocking(what, move || guest::prepare(&layout, &vm, &marker)).await?;
        Ok(format!("shares under {}", dir.display()))
    }

    /// `tart run` with the shares (not cancellable: a VM started unseen would be left behind;
    /// the start window bounds it), then its IP.
    async fn boot(&mut self) -> StepResult {
        let tart = self.tart.clone();
        let vm = self.s.vm.clone();
        let opts = RunOpts {
            dirs: self.shares.clone(),
            ..self.s.run_opts.clone()
        };
        if let Some(parent) = opts.log_path.parent() {
            let _ = tokio::fs::create_dir_all(parent).await;
        }
        let run_at = Instant::now();
        let proc = tart
            .run(&vm, &opts)
            .await
            .map_err(|e| format!("tart run: {e}"))?;
        self.proc = Some(proc);
        self.run_at = Some(run_at);
        if self.interrupted() {
            return Err(Failure::Interrupted);
        }
        // The resolver that sees a guest on the self-test's network (`dhcp`, or `arp` when
        // bridged).
        let resolver = opts.network.ip_resolver();
        let ip = self
            .call("ip", tart.ip(&vm, self.s.ip_wait, resolver))
            .await?;
        Ok(format!("running, IP {ip}"))
    }

    /// What the Pod worker does for a Pod with a command under the node's launcher mode:
    /// deliver the shipped launcher as planned and wait until a launcher reports.
    async fn launcher(&mut self) -> StepResult {
        let (Some(proc), Some(run_at)) = (&self.proc, self.run_at) else {
            return Err("no running VM".to_owned().into());
        };
        let mode = self.s.launcher;
        let status = self.s.layout.status(&self.s.vm);
        let wait = launcher::await_launcher(
            &*self.tart,
            &self.s.vm,
            proc,
            &status,
            plan(mode, true),
            self.s.guest_timeout,
        );
        let delivered = self.cancellable(wait).await??;
        Ok(launcher_detail(delivered, mode, run_at.elapsed()))
    }

    async fn exec(&mut self) -> StepResult {
        let tart = self.tart.clone();
        let vm = self.s.vm.clone();
        let argv = exec_argv(&self.s.marker);
        let out = self
            .call("exec", tart.exec(&vm, &argv, self.s.guest_timeout))
            .await?;
        Ok(check_exec(&out)?)
    }

    /// Wait for the command to end (the launcher powers the guest off) and read its end from
    /// the status share.
    async fn command(&mut self) -> StepResult {
        let Some(proc) = &self.proc else {
            return Err("no running VM".to_owned().into());
        };
        let wait = tokio::time::timeout(self.s.guest_timeout, proc.wait());
        let ended = self.cancellable(wait).await?.is_ok();
        let (layout, vm) = (self.s.layout.clone(), self.s.vm.clone());
        let report = tokio::task::spawn_blocking(move || guest::read_report(&layout, &vm))
            .await
            .map_err(|e| format!("reading the status share: {e}"))?;
        let checked = if ended {
            check_command(&report.end, &report.stdout)
        } else {
            let state = report.end.state.as_deref().unwrap_or("none");
            Err(format!(
                "the guest did not power off within {}s (status share state: {state})",
                self.s.guest_timeout.as_secs()
            ))
        };
        checked.map_err(|e| with_launcher_log(e, &report.launcher_log).into())
    }

    async fn stop(&mut self) -> StepResult {
        let Some(proc) = &self.proc else {
            return Ok("not started".to_owned());
        };
        if !proc.is_alive() {
            return Ok("already stopped (the guest powered off)".to_owned());
        }
        let outcome = self
            .tart
            .stop(proc, self.s.stop_grace)
            .await
            .map_err(|e| format!("tart stop: {e}"))?;
        Ok(format!("stopped ({})", outcome.as_str()))
    }

    /// Delete the VM and the guest directory, when this run may have made them; the VM's
    /// `tart run` log stays when an earlier step failed, for the operator to read.
    async fn delete(&mut self) -> StepResult {
        if !self.cloned && !self.guest_made {
            return Ok("nothing was created".to_owned());
        }
        let vm = self.s.vm.clone();
        if self.cloned {
            self.tart
                .delete(&vm)
                .await
                .map_err(|e| format!("tart delete {vm}: {e}"))?;
        }
        let layout = self.s.layout.clone();
        let what = format!("removing {}", layout.vm_dir(&vm).display());
        blocking(what, move || guest::remove(&layout, &vm)).await?;
        let log = &self.s.run_opts.log_path;
        if self.keep_log && log.exists() {
            return Ok(format!(
                "VM and guest directory removed; its tart run log kept: {}",
                log.display()
            ));
        }
        let _ = tokio::fs::remove_file(log).await;
        Ok("VM and guest directory removed".to_owned())
    }
}

/// `f` on the blocking pool; a failure is `what` and the error.
async fn blocking<R: Send + 'static>(
    what: String,
    f: impl FnOnce() -> std::io::Result<R> + Send + 'static,
) -> Result<R, Failure> {
    match tokio::task::spawn_blocking(f).await {
        Ok(Ok(r)) => Ok(r),
        Ok(Err(e)) => Err(Failure::Failed(format!("{what}: {e}"))),
        Err(e) => Err(Failure::Failed(format!("{what}: {e}"))),
    }
}
