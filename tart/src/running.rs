//! A started `tart run` process as the agent sees it: the [`RunningVm`] trait and
//! [`VmProcess`], its one implementation, which reads the process's end from a `watch`
//! channel. The channel is fed by whoever owns the process: the reaper of a spawned child or
//! the poller of an adopted one (`run.rs`), or the in-memory Tart of the `testing` feature.
//! Signalling the process is left to the stop sequence.

use std::{future::Future, time::Duration, time::SystemTime};

use tokio::sync::watch;

use crate::{ExitInfo, VmName};

/// A live (or just ended) `tart run` process.
pub trait RunningVm: Send + Sync + 'static {
    /// The VM this process runs.
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

/// Handle to a `tart run` process, spawned here or adopted. Cheap to clone; dropping it never
/// touches the process.
#[derive(Debug, Clone)]
pub struct VmProcess {
    name: VmName,
    pid: u32,
    adopted: bool,
    started_at: SystemTime,
    exit: watch::Receiver<Option<ExitInfo>>,
}

impl VmProcess {
    /// A handle whose end is published on `exit`'s sender, started now.
    pub(crate) fn new(
        name: VmName,
        pid: u32,
        adopted: bool,
        exit: watch::Receiver<Option<ExitInfo>>,
    ) -> Self {
        Self {
            name,
            pid,
            adopted,
            started_at: SystemTime::now(),
            exit,
        }
    }

    /// Wait for the exit for at most `d`; `Some` at once when it already happened.
    pub(crate) async fn wait_for(&self, d: Duration) -> Option<ExitInfo> {
        tokio::time::timeout(d, self.wait()).await.ok()
    }
}

impl RunningVm for VmProcess {
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
            // `None`: the publishing task is gone (runtime shutting down), we cannot know.
            seen.unwrap_or_else(ExitInfo::unknown)
        }
    }
}
