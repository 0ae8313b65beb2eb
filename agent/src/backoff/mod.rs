//! The one exponential backoff of the agent, with kubelet's curves as data.
//!
//! A [`Backoff`] is a first delay doubled per attempt up to a cap. The curves the agent uses are
//! constants here: a crash-looping VM ([`CRASH_LOOP`], kubelet's 10 s → 300 s), a failed Pod
//! reconcile ([`REQUEUE`], 1 s → 5 min, jittered so Pods that failed together do not retry
//! together), a failed Lease or status write ([`API_RETRY`], 0.5 s → 7 s, kubelet's
//! node-status retry) and the Pod watch ([`WATCH_RETRY`], 0.25 s → 1 s). Pure: the caller
//! counts attempts and supplies the jitter draw.

use std::time::Duration;

/// An exponential backoff curve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Backoff {
    /// Delay before the first retry.
    pub first: Duration,
    /// No delay is longer than this.
    pub max: Duration,
    /// Up to this fraction of the delay is added at random (0 for none).
    pub jitter_percent: u32,
}

/// A VM whose run ended and is restarted: kubelet's container restart backoff.
pub(crate) const CRASH_LOOP: Backoff = Backoff {
    first: Duration::from_secs(10),
    max: Duration::from_secs(300),
    jitter_percent: 0,
};

/// A Pod reconcile that failed: requeued per Pod.
pub(crate) const REQUEUE: Backoff = Backoff {
    first: Duration::from_secs(1),
    max: Duration::from_secs(300),
    jitter_percent: 20,
};

/// The Pod watch after a failure (the API server gone, or refusing while it starts): retried
/// every second at most, so the Pods are current within about a second of the API server's
/// return — a 403 while its authorizer warms up costs one more second, not seven. Jittered, so
/// a fleet that lost the API server together does not retry in step.
pub(crate) const WATCH_RETRY: Backoff = Backoff {
    first: Duration::from_millis(250),
    max: Duration::from_secs(1),
    jitter_percent: 20,
};

/// A Lease renewal or Node status write that failed: retried quickly, well inside the Lease.
pub(crate) const API_RETRY: Backoff = Backoff {
    first: Duration::from_millis(500),
    max: Duration::from_secs(7),
    jitter_percent: 0,
};

impl Backoff {
    /// The delay before retry number `n` (0 is the first retry): `first × 2ⁿ`, capped at
    /// `max`. Never overflows, whatever `n`.
    pub(crate) fn delay(&self, n: u32) -> Duration {
        let factor = 1u32.checked_shl(n.min(31)).unwrap_or(u32::MAX);
        self.first
            .checked_mul(factor)
            .map_or(self.max, |d| d.min(self.max))
    }

    /// [`Backoff::delay`] with jitter: `draw` in `[0, 1)` scales the random part.
    pub(crate) fn jittered(&self, n: u32, draw: f64) -> Duration {
        let base = self.delay(n);
        let part = f64::from(self.jitter_percent) / 100.0 * draw.clamp(0.0, 1.0);
        base + base.mul_f64(part)
    }
}

/// A curve as kube's watch backoff: the delays between consecutive failed watch attempts,
/// reset by the watcher once a watch succeeds, each delay jittered by the curve's share. With
/// [`API_RETRY`] a watch that lost the API server re-lists within 7 s of its return, with
/// [`WATCH_RETRY`] within about a second, instead of kube's default of up to 30 s.
#[derive(Debug, Clone)]
pub(crate) struct WatchBackoff {
    curve: Backoff,
    failures: u32,
}

impl WatchBackoff {
    /// A watch backoff that follows `curve`.
    pub(crate) fn new(curve: Backoff) -> Self {
        Self { curve, failures: 0 }
    }
}

impl Iterator for WatchBackoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        let d = self.curve.jittered(self.failures, rand::random());
        self.failures = self.failures.saturating_add(1);
        Some(d)
    }
}

impl kube::runtime::utils::Backoff for WatchBackoff {
    fn reset(&mut self) {
        self.failures = 0;
    }
}

#[cfg(test)]
mod tests;
