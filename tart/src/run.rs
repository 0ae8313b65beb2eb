//! `tart run` processes: spawned detached (own session, `setsid`) so a VM outlives the agent,
//! output to a size-capped per-VM log file, an early-exit start window classified from the log,
//! exit watching, and re-attachment after an agent restart by the `config.json` fcntl lock
//! (§1.4), never by `tart ip`.

use std::{future::Future, time::SystemTime};

use crate::{ExitInfo, VmName};

/// A live (or just ended) `tart run` process.
pub trait RunningVm: Send + Sync + 'static {
    /// The VM.
    fn name(&self) -> &VmName;
    /// PID of the `tart run` process.
    fn pid(&self) -> u32;
    /// `true` when re-attached after an agent restart rather than spawned by this process.
    fn adopted(&self) -> bool;
    /// When the process was spawned (for adopted VMs: when it was found).
    fn started_at(&self) -> SystemTime;
    /// Whether the process is still alive (non-blocking).
    fn is_alive(&self) -> bool;
    /// Resolves when the process has exited; any number of tasks may await it, and it resolves
    /// at once after the exit. Cancel-safe.
    fn wait(&self) -> impl Future<Output = ExitInfo> + Send;
}
