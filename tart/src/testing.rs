//! [`MemTart`]: an in-memory [`Tart`] for fast unit tests of the code above this crate
//! (feature `testing`). It keeps local VMs and cached images in a map and follows the real
//! CLI's observable rules (§2): `run` of a running VM is `AlreadyRunning`, `delete` of a
//! running VM is `LockBusy`, `delete` of a missing one is `Ok`, `clone` of an uncached remote
//! image caches it, and so on.
//!
//! Tests script it: queued failures per operation ([`MemTart::fail`]), per-operation latency
//! ([`MemTart::set_latency`], works with a paused clock), VM exits ([`MemTart::exit_vm`]) and a
//! call history ([`MemTart::calls`]). Scripted errors are returned as-is: they stand for the
//! final error after the real implementation's retries.

use std::{
    collections::{BTreeMap, BTreeSet, HashMap, VecDeque},
    future::Future,
    net::Ipv4Addr,
    sync::{Arc, Mutex, MutexGuard},
    time::{Duration, SystemTime},
};

use tokio::sync::watch;

use crate::{
    Credentials, Error, ErrorKind, ExecOutput, ExitInfo, ExitReason, IpResolver, Op, PruneOpts,
    Result, RunOpts, RunningVm, SetOpts, Source, StopOutcome, Tart, Version, VmDetails, VmInfo,
    VmName, VmState, command::is_remote,
};

/// One recorded call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemCall {
    /// The operation.
    pub op: Op,
    /// VM name, image or other main argument.
    pub target: String,
}

#[derive(Debug)]
struct MemVmEntry {
    details: VmDetails,
    ip: Ipv4Addr,
    run: Option<watch::Sender<Option<ExitInfo>>>,
    pid: u32,
}

#[derive(Debug, Default)]
struct State {
    vms: BTreeMap<String, MemVmEntry>,
    cache: BTreeSet<String>,
    /// `None`: every remote image exists.
    registry: Option<BTreeSet<String>>,
    failures: HashMap<Op, VecDeque<ErrorKind>>,
    latency: HashMap<Op, Duration>,
    calls: Vec<MemCall>,
    exec_output: Option<ExecOutput>,
    next: u32,
}

/// In-memory [`Tart`]. Cheap to clone; clones share state.
#[derive(Debug, Clone, Default)]
pub struct MemTart {
    state: Arc<Mutex<State>>,
}

/// A VM "process" of [`MemTart`].
#[derive(Debug, Clone)]
pub struct MemVm {
    name: VmName,
    pid: u32,
    adopted: bool,
    started_at: SystemTime,
    exit: watch::Receiver<Option<ExitInfo>>,
}

impl RunningVm for MemVm {
    fn name(&self) -> &VmName {
        &self.name
    }
    fn pid(&self) -> u32 {
        self.pid
    }
    fn adopted(&self) -> bool {
        self.adopted
    }
    fn started_at(&self) -> SystemTime {
        self.started_at
    }
    fn is_alive(&self) -> bool {
        self.exit.borrow().is_none()
    }
    fn wait(&self) -> impl Future<Output = ExitInfo> + Send {
        let mut rx = self.exit.clone();
        async move {
            let seen = rx
                .wait_for(Option::is_some)
                .await
                .ok()
                .and_then(|v| v.clone());
            seen.unwrap_or(ExitInfo {
                reason: ExitReason::Unknown,
                code: None,
                signal: None,
            })
        }
    }
}

impl MemTart {
    /// Empty: no VMs, nothing cached, every remote image exists.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Pre-cache a remote image.
    pub fn with_cached(self, image: &str) -> Self {
        self.lock().cache.insert(image.to_owned());
        self
    }

    /// Only these remote images exist (others are `NotFound` on pull/clone).
    pub fn with_registry<'a>(self, images: impl IntoIterator<Item = &'a str>) -> Self {
        self.lock().registry = Some(images.into_iter().map(str::to_owned).collect());
        self
    }

    /// A stopped local VM.
    pub fn with_vm(self, name: &str) -> Self {
        self.lock().create(name);
        self
    }

    /// The next call of `op` fails with `kind` (queued; one entry per call).
    pub fn fail(&self, op: Op, kind: ErrorKind) {
        self.lock().failures.entry(op).or_default().push_back(kind);
    }

    /// Every call of `op` takes `d` first (on the tokio clock).
    pub fn set_latency(&self, op: Op, d: Duration) {
        self.lock().latency.insert(op, d);
    }

    /// What `exec` returns for running VMs (default: exit 0, no output).
    pub fn set_exec_output(&self, out: ExecOutput) {
        self.lock().exec_output = Some(out);
    }

    /// Make a running VM's process exit with `code` (0: guest shut down). `false` when it was
    /// not running.
    pub fn exit_vm(&self, vm: &VmName, code: i32) -> bool {
        let mut s = self.lock();
        let Some(tx) = s.vms.get_mut(vm.as_str()).and_then(|e| e.run.take()) else {
            return false;
        };
        let reason = if code == 0 {
            ExitReason::Completed
        } else {
            ExitReason::Failed
        };
        let _ = tx.send(Some(ExitInfo {
            reason,
            code: Some(code),
            signal: None,
        }));
        true
    }

    /// Call history.
    pub fn calls(&self) -> Vec<MemCall> {
        self.lock().calls.clone()
    }

    /// Calls of one operation, as their targets.
    pub fn calls_of(&self, op: Op) -> Vec<String> {
        self.lock()
            .calls
            .iter()
            .filter(|c| c.op == op)
            .map(|c| c.target.clone())
            .collect()
    }

    /// Names of local VMs.
    pub fn vm_names(&self) -> Vec<String> {
        self.lock().vms.keys().cloned().collect()
    }

    /// Whether `image` is cached.
    pub fn is_cached(&self, image: &str) -> bool {
        self.lock().cache.contains(image)
    }

    /// Record the call, apply latency, pop a scripted failure.
    async fn enter(&self, op: Op, target: &str) -> Result<()> {
        let delay = {
            let mut s = self.lock();
            s.calls.push(MemCall {
                op,
                target: target.to_owned(),
            });
            s.latency.get(&op).copied()
        };
        if let Some(d) = delay {
            tokio::time::sleep(d).await;
        }
        let failure = self
            .lock()
            .failures
            .get_mut(&op)
            .and_then(VecDeque::pop_front);
        match failure {
            Some(kind) => Err(err(op, kind, "scripted failure")),
            None => Ok(()),
        }
    }
}

impl State {
    fn create(&mut self, name: &str) {
        self.next += 1;
        let n = self.next;
        self.vms.insert(
            name.to_owned(),
            MemVmEntry {
                details: VmDetails {
                    os: "darwin".into(),
                    cpu: 4,
                    memory_mib: 8192,
                    disk_gb: 50,
                    disk_format: "raw".into(),
                    size_gb: 20.0,
                    display: "1024x768".into(),
                    state: VmState::Stopped,
                },
                ip: Ipv4Addr::new(192, 168, 64, (n % 250 + 2) as u8),
                run: None,
                pid: 0,
            },
        );
    }

    fn vm(&mut self, op: Op, vm: &VmName) -> Result<&mut MemVmEntry> {
        self.vms.get_mut(vm.as_str()).ok_or_else(|| {
            err(
                op,
                ErrorKind::NotFound,
                &format!("the specified VM \"{vm}\" does not exist"),
            )
        })
    }

    fn pull(&mut self, op: Op, image: &str) -> Result<()> {
        if self.registry.as_ref().is_some_and(|r| !r.contains(image)) {
            return Err(err(
                op,
                ErrorKind::NotFound,
                "UnexpectedHTTPStatusCode(when: \"pulling manifest\", code: 404, details: \"\")",
            ));
        }
        self.cache.insert(image.to_owned());
        Ok(())
    }
}

fn err(op: Op, kind: ErrorKind, msg: &str) -> Error {
    let code = match kind {
        ErrorKind::NotFound | ErrorKind::AlreadyRunning | ErrorKind::NotRunning => Some(2),
        ErrorKind::Timeout | ErrorKind::Stalled | ErrorKind::Spawn => None,
        ErrorKind::Usage => Some(64),
        _ => Some(1),
    };
    Error::new(op, kind, code, msg)
}

fn running(e: &MemVmEntry) -> bool {
    e.run.as_ref().is_some_and(|tx| tx.borrow().is_none())
}

impl Tart for MemTart {
    type Vm = MemVm;

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
        // §2.2: an existing target is silently overwritten.
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

    async fn run(&self, vm: &VmName, _opts: &RunOpts) -> Result<MemVm> {
        self.enter(Op::Run, vm.as_str()).await?;
        let mut s = self.lock();
        s.next += 1;
        let pid = 10_000 + s.next;
        let e = s.vm(Op::Run, vm).map_err(|mut e| {
            e.exit_code = Some(1); // §1.3: `tart run <missing>` exits 1
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
        Ok(MemVm {
            name: vm.clone(),
            pid,
            adopted: false,
            started_at: SystemTime::now(),
            exit: rx,
        })
    }

    async fn attach(&self, vm: &VmName, _opts: &RunOpts) -> Result<Option<MemVm>> {
        self.enter(Op::Run, vm.as_str()).await?;
        let s = self.lock();
        Ok(s.vms
            .get(vm.as_str())
            .filter(|e| running(e))
            .map(|e| MemVm {
                name: vm.clone(),
                pid: e.pid,
                adopted: true,
                started_at: SystemTime::now(),
                exit: e
                    .run
                    .as_ref()
                    .map(watch::Sender::subscribe)
                    .expect("running"),
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

    async fn stop(&self, vm: &MemVm, _grace: Duration) -> Result<StopOutcome> {
        self.enter(Op::Stop, vm.name.as_str()).await?;
        if !vm.is_alive() {
            return Ok(StopOutcome::AlreadyStopped);
        }
        self.exit_vm(&vm.name, 0);
        Ok(StopOutcome::GuestShutdown)
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

    async fn prune(&self, _opts: &PruneOpts) -> Result<()> {
        self.enter(Op::Prune, "").await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vm(s: &str) -> VmName {
        VmName::new(s).unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn scripted_failure_is_returned_once_after_latency() {
        let t = MemTart::new();
        t.fail(Op::Pull, ErrorKind::Network);
        t.set_latency(Op::Pull, Duration::from_secs(30));
        let start = tokio::time::Instant::now();
        assert_eq!(
            t.pull("ghcr.io/a/b:1", None).await.unwrap_err().kind,
            ErrorKind::Network
        );
        assert_eq!(start.elapsed(), Duration::from_secs(30));
        t.pull("ghcr.io/a/b:1", None).await.unwrap();
        assert!(t.is_cached("ghcr.io/a/b:1"));
        assert_eq!(t.calls_of(Op::Pull).len(), 2);
    }

    #[tokio::test]
    async fn triggered_exit_reaches_waiters_and_frees_the_vm() {
        let t = MemTart::new().with_vm("a");
        let opts = RunOpts {
            dirs: vec![],
            network: Default::default(),
            suspendable: false,
            log_path: "/dev/null".into(),
            log_cap_bytes: 0,
            start_window: Duration::ZERO,
        };
        let h = t.run(&vm("a"), &opts).await.unwrap();
        assert_eq!(
            t.delete(&vm("a")).await.unwrap_err().kind,
            ErrorKind::LockBusy
        );
        assert!(t.exit_vm(&vm("a"), 1));
        assert_eq!(h.wait().await.code, Some(1));
        assert!(!h.is_alive());
        t.delete(&vm("a")).await.unwrap();
        assert!(t.vm_names().is_empty());
    }

    #[tokio::test]
    async fn registry_restricts_pullable_images() {
        let t = MemTart::new().with_registry(["ghcr.io/a/b:1"]);
        assert_eq!(
            t.clone_vm("ghcr.io/a/c:1", &vm("x"), None)
                .await
                .unwrap_err()
                .kind,
            ErrorKind::NotFound
        );
        t.clone_vm("ghcr.io/a/b:1", &vm("x"), None).await.unwrap();
        assert_eq!(t.vm_names(), ["x"]);
    }
}
