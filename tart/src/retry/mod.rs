//! Bounded kill-and-retry of one operation (the inner of the two retry
//! layers, docs/tart-crate.md "Retry policy").
//!
//! Only [`ErrorKind::is_retryable`] kinds (timeout, stall, transient network, lock-busy) are
//! retried, with exponential backoff and jitter; everything else returns at once. A pull or
//! clone that we killed is retried **immediately** the first time, before any other `tart`
//! command can run tmp GC and delete its resumable download
//! (docs/reference/tart-cli.md §1.5, §7.5). Every attempt is reported to the [`Observer`].
//! Requeueing after a final error is the controller's job.

use std::{future::Future, time::Duration};

use backon::{BackoffBuilder, ExponentialBuilder};
use tokio::time::Instant;
use tracing::warn;

use crate::{Attempt, AttemptOutcome, ErrorKind, Observer, Op, Result};

/// How often and how patiently to retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in total, including the first (at least 1).
    pub max_attempts: u32,
    /// Delay before the first retry; doubles each time.
    pub min_delay: Duration,
    /// Upper bound of one delay (jitter included).
    pub max_delay: Duration,
    /// Add up to 100 % random jitter to each delay.
    pub jitter: bool,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 3,
            min_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(30),
            jitter: true,
        }
    }
}

impl RetryPolicy {
    /// A single attempt, no retry.
    pub fn none() -> Self {
        Self {
            max_attempts: 1,
            ..Self::default()
        }
    }

    /// The delays between attempts (`max_attempts - 1` of them), before the immediate-retry
    /// rule for killed downloads is applied.
    pub(crate) fn delays(&self) -> impl Iterator<Item = Duration> + use<> {
        let mut b = ExponentialBuilder::default()
            .with_min_delay(self.min_delay)
            .with_max_delay(self.max_delay)
            .with_max_times(self.max_attempts.saturating_sub(1) as usize);
        if self.jitter {
            b = b.with_jitter();
        }
        let max = self.max_delay;
        b.build().map(move |d| d.min(max))
    }

    /// Run `attempt` until it succeeds, fails with a non-retryable kind, or attempts run out.
    ///
    /// # Errors
    /// The last attempt's error.
    ///
    /// # Cancellation
    /// Dropping the future drops the running attempt (a short command's process group is then
    /// killed).
    pub async fn run<T, F, Fut>(&self, op: Op, observer: &dyn Observer, mut attempt: F) -> Result<T>
    where
        F: FnMut(u32) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let mut delays = self.delays();
        let mut immediate_used = false;
        let mut n = 0;
        loop {
            n += 1;
            let started = Instant::now();
            let result = attempt(n).await;
            let elapsed = started.elapsed();
            let (outcome, killed) = match &result {
                Ok(_) => (AttemptOutcome::Ok, false),
                Err(e) => (AttemptOutcome::Error(e.kind), is_kill(e.kind)),
            };
            let retryable = matches!(&result, Err(e) if e.kind.is_retryable());
            let delay = if retryable && n < self.max_attempts.max(1) {
                // The first retry of a killed download keeps its tmp dir only if it comes
                // before anything else runs (docs/reference/tart-cli.md §7.5).
                let download = matches!(op, Op::Pull | Op::Clone);
                if download && killed && !immediate_used {
                    immediate_used = true;
                    Some(Duration::ZERO)
                } else {
                    delays.next()
                }
            } else {
                None
            };
            observer.attempt(&Attempt {
                op,
                attempt: n,
                outcome,
                elapsed,
                killed,
                will_retry: delay.is_some(),
            });
            match (result, delay) {
                (Ok(v), _) => return Ok(v),
                (Err(e), None) => return Err(e),
                (Err(e), Some(d)) => {
                    warn!(op = %op, attempt = n, kind = e.kind.as_str(), delay_ms = d.as_millis() as u64, error = %e, "tart attempt failed, retrying");
                    tokio::time::sleep(d).await;
                }
            }
        }
    }
}

fn is_kill(kind: ErrorKind) -> bool {
    matches!(kind, ErrorKind::Timeout | ErrorKind::Stalled)
}

#[cfg(test)]
mod tests;
