//! The agent's own time per Pod before `tart run` (`pod_agent_overhead_seconds`).

use std::time::Duration;

use tokio::time::Instant;

/// Measures the agent's own time per Pod before `tart run`: since the worker first saw the Pod,
/// less the time spent in steps that are not the agent's own work (tart operations, slot
/// waits, backoff).
#[derive(Debug, Clone, Copy)]
pub(super) struct OverheadClock {
    born: Instant,
    pub(super) excluded: Duration,
    /// No failure and no backoff so far: only clean first starts are measured.
    pub(super) clean: bool,
}

impl OverheadClock {
    pub(super) fn new() -> Self {
        Self {
            born: Instant::now(),
            excluded: Duration::ZERO,
            clean: true,
        }
    }

    pub(super) fn own_time(&self) -> Duration {
        self.born.elapsed().saturating_sub(self.excluded)
    }
}
