//! [`MemTart`]: an in-memory [`Tart`](crate::Tart) for fast unit tests of the code above this crate
//! (feature `testing`). It keeps local VMs and cached images in a map and follows the real
//! CLI's observable rules (docs/reference/tart-cli.md §2): `run` of a running VM is
//! `AlreadyRunning`, `delete` of a running VM is `LockBusy`, `delete` of a missing one is `Ok`,
//! `clone` of an uncached remote image caches it, and so on.
//!
//! Tests script it: queued failures per operation ([`MemTart::fail`]), per-operation latency
//! ([`MemTart::set_latency`], works with a paused clock), VM exits ([`MemTart::exit_vm`]) and a
//! call history ([`MemTart::calls`]). Scripted errors are returned as-is: they stand for the
//! final error after the real implementation's retries.

use std::{
    collections::{BTreeMap, BTreeSet, HashMap, VecDeque},
    net::Ipv4Addr,
    sync::{Arc, Mutex, MutexGuard},
    time::Duration,
};

use tokio::sync::watch;

use crate::{
    Error, ErrorKind, ExecOutput, ExitInfo, ExitReason, Op, Result, StopOutcome, VmDetails, VmName,
    VmState,
};

/// One recorded call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemCall {
    /// Which operation was called.
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

/// The digest MemTart reports for a cached image: stable, derived from its name.
pub fn fake_digest(image: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in image.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    format!("sha256:{h:016x}{h:016x}{h:016x}{h:016x}")
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
    /// What `stop` reports for a running VM (default `GuestShutdown`).
    stop_outcome: Option<StopOutcome>,
    /// VM names passed to `attach`.
    attaches: Vec<String>,
    next: u32,
}

/// In-memory [`Tart`](crate::Tart). Cheap to clone; clones share state.
#[derive(Debug, Clone, Default)]
pub struct MemTart {
    state: Arc<Mutex<State>>,
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

    /// How `stop` of a running VM ends (default [`StopOutcome::GuestShutdown`], exit code 0;
    /// `Killed` ends the process with SIGKILL).
    pub fn set_stop_outcome(&self, outcome: StopOutcome) {
        self.lock().stop_outcome = Some(outcome);
    }

    /// VM names passed to `attach`, in order (attach is not an [`Op`], so it is kept apart
    /// from [`MemTart::calls`]).
    pub fn attach_calls(&self) -> Vec<String> {
        self.lock().attaches.clone()
    }

    /// Make a running VM's process exit with `code` (0: guest shut down). `false` when it was
    /// not running.
    pub fn exit_vm(&self, vm: &VmName, code: i32) -> bool {
        let reason = if code == 0 {
            ExitReason::Completed
        } else {
            ExitReason::Failed
        };
        self.end_vm(
            vm,
            ExitInfo {
                reason,
                code: Some(code),
                signal: None,
            },
        )
    }

    /// Make a running VM's process die by SIGKILL (host power cut, OOM...). `false` when it
    /// was not running.
    pub fn kill_vm(&self, vm: &VmName) -> bool {
        self.end_vm(
            vm,
            ExitInfo {
                reason: ExitReason::Signaled,
                code: None,
                signal: Some(9),
            },
        )
    }

    fn end_vm(&self, vm: &VmName, info: ExitInfo) -> bool {
        let mut s = self.lock();
        let Some(tx) = s.vms.get_mut(vm.as_str()).and_then(|e| e.run.take()) else {
            return false;
        };
        let _ = tx.send(Some(info));
        true
    }

    /// Every operation called so far, in order (`attach` is kept apart, see
    /// [`MemTart::attach_calls`]).
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

mod exec;
mod tart_impl;

#[cfg(test)]
mod tests;
