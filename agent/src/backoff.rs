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
pub struct Backoff {
    /// Delay before the first retry.
    pub first: Duration,
    /// No delay is longer than this.
    pub max: Duration,
    /// Up to this fraction of the delay is added at random (0 for none).
    pub jitter_percent: u32,
}

/// A VM whose run ended and is restarted: kubelet's container restart backoff.
pub const CRASH_LOOP: Backoff = Backoff {
    first: Duration::from_secs(10),
    max: Duration::from_secs(300),
    jitter_percent: 0,
};

/// A Pod reconcile that failed: requeued per Pod.
pub const REQUEUE: Backoff = Backoff {
    first: Duration::from_secs(1),
    max: Duration::from_secs(300),
    jitter_percent: 20,
};

/// The Pod watch after a failure (the API server gone, or refusing while it starts): retried
/// every second at most, so the Pods are current within about a second of the API server's
/// return — a 403 while its authorizer warms up costs one more second, not seven. Jittered, so
/// a fleet that lost the API server together does not retry in step.
pub const WATCH_RETRY: Backoff = Backoff {
    first: Duration::from_millis(250),
    max: Duration::from_secs(1),
    jitter_percent: 20,
};

/// A Lease renewal or Node status write that failed: retried quickly, well inside the Lease.
pub const API_RETRY: Backoff = Backoff {
    first: Duration::from_millis(500),
    max: Duration::from_secs(7),
    jitter_percent: 0,
};

impl Backoff {
    /// The delay before retry number `n` (0 is the first retry): `first × 2ⁿ`, capped at
    /// `max`. Never overflows, whatever `n`.
    pub fn delay(&self, n: u32) -> Duration {
        let factor = 1u32.checked_shl(n.min(31)).unwrap_or(u32::MAX);
        self.first
            .checked_mul(factor)
            .map_or(self.max, |d| d.min(self.max))
    }

    /// [`Backoff::delay`] with jitter: `draw` in `[0, 1)` scales the random part.
    pub fn jittered(&self, n: u32, draw: f64) -> Duration {
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
pub struct WatchBackoff {
    curve: Backoff,
    failures: u32,
}

impl WatchBackoff {
    /// A watch backoff that follows `curve`.
    pub fn new(curve: Backoff) -> Self {
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
mod tests {
    use super::*;

    fn secs(b: Backoff, n: std::ops::Range<u32>) -> Vec<f64> {
        n.map(|i| b.delay(i).as_secs_f64()).collect()
    }

    #[test]
    fn crash_loop_is_kubelets_10s_doubling_to_5m() {
        assert_eq!(
            secs(CRASH_LOOP, 0..8),
            [10.0, 20.0, 40.0, 80.0, 160.0, 300.0, 300.0, 300.0]
        );
    }

    #[test]
    fn requeue_doubles_from_1s_to_5m() {
        assert_eq!(secs(REQUEUE, 0..4), [1.0, 2.0, 4.0, 8.0]);
        assert_eq!(REQUEUE.delay(9), Duration::from_secs(300));
    }

    #[test]
    fn api_retry_starts_at_half_a_second_and_stops_at_7s() {
        assert_eq!(secs(API_RETRY, 0..5), [0.5, 1.0, 2.0, 4.0, 7.0]);
    }

    #[test]
    fn huge_attempt_counts_stay_at_the_cap() {
        for b in [CRASH_LOOP, REQUEUE, API_RETRY] {
            assert_eq!(b.delay(u32::MAX), b.max);
            assert_eq!(b.delay(64), b.max);
        }
    }

    #[test]
    fn a_watch_backoff_follows_its_curve_until_reset() {
        use kube::runtime::utils::Backoff as _;
        let mut w = WatchBackoff::new(API_RETRY);
        let first: Vec<f64> = w.by_ref().take(6).map(|d| d.as_secs_f64()).collect();
        assert_eq!(first, [0.5, 1.0, 2.0, 4.0, 7.0, 7.0]);
        w.reset();
        assert_eq!(w.next(), Some(Duration::from_millis(500)));
    }

    #[test]
    fn the_pod_watch_retries_within_a_second_and_a_fifth() {
        use kube::runtime::utils::Backoff as _;
        assert_eq!(secs(WATCH_RETRY, 0..4), [0.25, 0.5, 1.0, 1.0]);
        let mut w = WatchBackoff::new(WATCH_RETRY);
        for d in w.by_ref().take(20) {
            assert!(d <= Duration::from_millis(1200), "{d:?}");
        }
        w.reset();
        assert!(w.next().unwrap() <= Duration::from_millis(300));
    }

    #[test]
    fn jitter_adds_at_most_its_share() {
        assert_eq!(REQUEUE.jittered(0, 0.0), Duration::from_secs(1));
        assert_eq!(REQUEUE.jittered(0, 1.0), Duration::from_millis(1200));
        assert_eq!(CRASH_LOOP.jittered(0, 1.0), Duration::from_secs(10));
    }
}
