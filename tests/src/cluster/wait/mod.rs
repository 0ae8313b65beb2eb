//! Polling and naming helpers for tests on a shared control plane: [`wait_for`] (poll with a
//! deadline, never sleep-and-hope) and [`unique`] (per-test names, so tests run in parallel).
use std::{
    fmt,
    future::Future,
    sync::atomic::{AtomicU32, Ordering},
    time::Duration,
};

/// Interval between two polls of [`wait_for`].
const POLL_INTERVAL: Duration = Duration::from_millis(200);

/// A DNS-1123 label unique within this process and very likely across processes:
/// `<prefix>-<counter>-<random>`, lowercase, at most 63 characters.
pub fn unique(prefix: &str) -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let mut p: String = prefix
        .chars()
        .map(|c| c.to_ascii_lowercase())
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .take(40)
        .collect();
    p = p.trim_matches('-').to_owned();
    if p.is_empty() {
        p.push('t');
    }
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{p}-{n}-{:06x}", rand::random::<u32>() & 0xff_ffff)
}

/// [`wait_for`] gave up: the condition did not hold before the deadline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitTimeout {
    /// How long it polled.
    pub after: Duration,
    /// How many polls returned `None` (or did not answer in time).
    pub polls: u32,
}

impl fmt::Display for WaitTimeout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "condition not met after {:?} ({} polls)",
            self.after, self.polls
        )
    }
}

impl std::error::Error for WaitTimeout {}

/// Polls `poll` every 200 ms until it returns `Some`, for at most `deadline`. Each poll is
/// itself bounded by the time left, so a hung API call cannot outlive the deadline.
///
/// # Errors
/// [`WaitTimeout`] when the deadline passes first.
pub async fn wait_for<T, F, Fut>(deadline: Duration, mut poll: F) -> Result<T, WaitTimeout>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let t0 = tokio::time::Instant::now();
    let end = t0 + deadline;
    let mut polls = 0;
    loop {
        polls += 1;
        if let Ok(Some(v)) = tokio::time::timeout_at(end, poll()).await {
            return Ok(v);
        }
        let now = tokio::time::Instant::now();
        if now >= end {
            return Err(WaitTimeout {
                after: now - t0,
                polls,
            });
        }
        tokio::time::sleep_until((now + POLL_INTERVAL).min(end)).await;
    }
}

#[cfg(test)]
mod tests;
