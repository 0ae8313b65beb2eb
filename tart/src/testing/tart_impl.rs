//! `impl Tart for MemTart`: the CLI's observable rules (docs/reference/tart-cli.md §2) over the
//! in-memory state.

use std::{net::Ipv4Addr, time::Duration};

use tokio::sync::watch;

use super::{MemTart, err, running};
use crate::{
    Credentials, ErrorKind, ExecOpts, ExecOutput, ExecSession, IpResolver, Op, PruneOpts, Result,
    RunOpts, RunningVm, SetOpts, Source, StopOutcome, Tart, Version, VmDetails, VmInfo, VmName,
    VmProcess, VmState, command::is_remote,
};

impl Tart for MemTart {
    type Vm = VmProcess;

    async fn version(&self) -> Result<Version> {
        self.enter(Op::Version, "").await?;
        Ok(crate::parse::version("2.35.0"))
    }

    async fn list(&self) -> Result<Vec<VmInfo>> {
        self.enter(Op::List, "").await?;
        let s = self.lock();
        let local = s.vms.iter().map(|(name, e)| VmInfo {
            source: Source::Local,
            name: name.clone(),
            disk_gb: e.details.disk_gb,
            size_gb: e.details.size_gb,
            accessed: None,
            state: if running(e) {
                VmState::Running
            } else {
                VmState::Stopped
            },
        });
        let oci = s.cache.iter().map(|name| VmInfo {
            source: Source::Oci,
            name: name.clone(),
            disk_gb: 50,
            size_gb: 20.0,
            accessed: None,
            state: VmState::Stopped,
        });
        Ok(local.chain(oci).collect())
    }

    async fn get(&self, vm: &VmName) -> Result<VmDetails> {
        self.enter(Op::Get, vm.as_str()).await?;
        let mut s = self.lock();
        let e = s.vm(Op::Get, vm)?;
        let mut d = e.details.clone();
        d.state = if running(e) {
            VmState::Running
        } else {
            VmState::Stopped
        };
        Ok(d)
    }

    async fn pull(&self, image: &str, _creds: Option<&Credentials>) -> Result<()> {
        self.enter(Op::Pull, image).await?;
        self.lock().pull(Op::Pull, image)
    }

    async fn clone_vm(
        &self,
        source: &str,
        vm: &VmName,
        _creds: Option<&Credentials>,
    ) -> Result<()> {
        self.enter(Op::Clone, vm.as_str()).await?;
        let mut s = self.lock();
        if is_remote(source) {
            if !s.cache.contains(source) {
                s.pull(Op::Clone, source)?;
            }
        } else {
            s.vm(
                Op::Clone,
                &VmName::new(source).map_err(|m| err(Op::Clone, ErrorKind::NotFound, &m))?,
            )?;
        }
        // docs/reference/tart-cli.md §2.2: an existing target is silently overwritten.
        s.create(vm.as_str());
        Ok(())
    }

    async fn set(&self, vm: &VmName, opts: &SetOpts) -> Result<()> {
        self.enter(Op::Set, vm.as_str()).await?;
        let mut s = self.lock();
        let d = &mut s.vm(Op::Set, vm)?.details;
        if let Some(c) = opts.cpu {
            d.cpu = u32::from(c);
        }
        if let Some(m) = opts.memory_mib {
            d.memory_mib = m;
        }
        if let Some(g) = opts.disk_size_gb {
            if u64::from(g) < d.disk_gb {
                return Err(err(
                    Op::Set,
                    ErrorKind::Other,
                    "new disk size should be larger",
                ));
            }
            d.disk_gb = u64::from(g);
        }
        Ok(())
    }

    async fn run(&self, vm: &VmName, _opts: &RunOpts) -> Result<VmProcess> {
        self.enter(Op::Run, vm.as_str()).await?;
        let mut s = self.lock();
        s.next += 1;
        let pid = 10_000 + s.next;
        let e = s.vm(Op::Run, vm).map_err(|mut e| {
            e.exit_code = Some(1); // docs/reference/tart-cli.md §1.3: `tart run <missing>` exits 1
            e
        })?;
        if running(e) {
            return Err(err(
                Op::Run,
                ErrorKind::AlreadyRunning,
                &format!("VM \"{vm}\" is already running!"),
            ));
        }
        let (tx, rx) = watch::channel(None);
        e.run = Some(tx);
        e.pid = pid;
        Ok(VmProcess::new(vm.clone(), pid, false, rx))
    }

    async fn attach(&self, vm: &VmName, _opts: &RunOpts) -> Result<Option<VmProcess>> {
        let mut s = self.lock();
        s.attaches.push(vm.as_str().to_owned());
        Ok(s.vms.get(vm.as_str()).filter(|e| running(e)).map(|e| {
            let exit = e.run.as_ref().map(watch::Sender::subscribe);
            VmProcess::new(vm.clone(), e.pid, true, exit.expect("running"))
        }))
    }

    async fn ip(&self, vm: &VmName, _wait: Duration, _resolver: IpResolver) -> Result<Ipv4Addr> {
        self.enter(Op::Ip, vm.as_str()).await?;
        let mut s = self.lock();
        let e = s.vm(Op::Ip, vm)?;
        if running(e) {
            Ok(e.ip)
        } else {
            Err(err(
                Op::Ip,
                ErrorKind::Other,
                "no IP address found, is your VM running?",
            ))
        }
    }

    async fn stop(&self, vm: &VmProcess, _grace: Duration) -> Result<StopOutcome> {
        self.enter(Op::Stop, vm.name().as_str()).await?;
        if !vm.is_alive() {
            return Ok(StopOutcome::AlreadyStopped);
        }
        let outcome = self
            .lock()
            .stop_outcome
            .unwrap_or(StopOutcome::GuestShutdown);
        if outcome == StopOutcome::Killed {
            self.kill_vm(vm.name());
        } else {
            self.exit_vm(vm.name(), 0);
        }
        Ok(outcome)
    }

    async fn delete(&self, vm: &VmName) -> Result<()> {
        self.enter(Op::Delete, vm.as_str()).await?;
        let mut s = self.lock();
        match s.vms.get(vm.as_str()) {
            None => Ok(()),
            Some(e) if running(e) => Err(err(
                Op::Delete,
                ErrorKind::LockBusy,
                &format!("VM \"{vm}\" is running"),
            )),
            Some(_) => {
                s.vms.remove(vm.as_str());
                Ok(())
            }
        }
    }

    async fn delete_image(&self, image: &str) -> Result<()> {
        self.enter(Op::Delete, image).await?;
        self.lock().cache.remove(image);
        Ok(())
    }

    async fn exec(&self, vm: &VmName, _argv: &[String], _deadline: Duration) -> Result<ExecOutput> {
        self.enter(Op::Exec, vm.as_str()).await?;
        let mut s = self.lock();
        let out = s.exec_output.clone();
        let e = s.vm(Op::Exec, vm)?;
        if !running(e) {
            return Err(err(
                Op::Exec,
                ErrorKind::NotRunning,
                &format!("VM \"{vm}\" is not running"),
            ));
        }
        Ok(out.unwrap_or(ExecOutput {
            exit_code: 0,
            stdout: String::new(),
            stderr: String::new(),
        }))
    }

    async fn exec_streaming(
        &self,
        vm: &VmName,
        _argv: &[String],
        opts: ExecOpts,
    ) -> Result<ExecSession> {
        let out = self.exec(vm, &[], Duration::ZERO).await?;
        Ok(super::exec::session(out, opts))
    }

    async fn prune(&self, _opts: &PruneOpts) -> Result<()> {
        self.enter(Op::Prune, "").await
    }

    async fn cached_digest(&self, host: &str, repository: &str, tag: &str) -> Option<String> {
        let image = format!("{host}/{repository}:{tag}");
        self.lock()
            .cache
            .contains(&image)
            .then(|| super::fake_digest(&image))
    }
}
