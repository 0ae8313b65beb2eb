//! Per-operation deadlines for `TartCli`, with the defaults of docs/reference/tart-cli.md §7.4.
//! Pure data that refers to no other module; enforcing them (SIGKILL of the process group) is the
//! `process` module's job.

use std::time::Duration;

use tokio::time::Instant;

/// Per-operation deadlines (docs/reference/tart-cli.md §7.4). On expiry the process group is
/// SIGKILLed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadlines {
    /// `tart --version`; default 10 s.
    pub version: Duration,
    /// `tart list`; default 60 s.
    pub list: Duration,
    /// `tart get`; default 60 s.
    pub get: Duration,
    /// `tart set`; default 60 s.
    pub set: Duration,
    /// `tart delete`; default 60 s.
    pub delete: Duration,
    /// `clone` from a local VM. A remote source may pull first and gets
    /// `max(clone, pull)` plus the stall watchdog.
    pub clone: Duration,
    /// `pull` overall: the upper bound. Once the compressed disk size is printed, the pull
    /// must also end within [`Deadlines::pull_size`] of that line
    /// (docs/reference/tart-cli.md §7.4).
    pub pull: Duration,
    /// The size-aware part of a pull's deadline (docs/reference/tart-cli.md §7.4: 60 s per GB + 10
    /// min).
    pub pull_size: SizeDeadline,
    /// No new stdout line for this long kills a pull (or a remote clone), except while it is
    /// `waiting for lock...`.
    pub pull_stall: Duration,
    /// Added to `ip --wait`.
    pub ip_extra: Duration,
    /// Added to `stop --timeout`.
    pub stop_extra: Duration,
    /// `tart prune`; default 10 min.
    pub prune: Duration,
}

impl Default for Deadlines {
    fn default() -> Self {
        Self {
            version: Duration::from_secs(10),
            list: Duration::from_secs(60),
            get: Duration::from_secs(60),
            set: Duration::from_secs(60),
            delete: Duration::from_secs(60),
            clone: Duration::from_secs(5 * 60),
            pull: Duration::from_secs(3 * 3600),
            pull_size: SizeDeadline {
                per_gb: Duration::from_secs(60),
                base: Duration::from_secs(10 * 60),
            },
            pull_stall: Duration::from_secs(10 * 60),
            ip_extra: Duration::from_secs(15),
            stop_extra: Duration::from_secs(15),
            prune: Duration::from_secs(10 * 60),
        }
    }
}

/// The part of a pull's deadline that grows with the image (docs/reference/tart-cli.md §7.4:
/// `compressed_GB × 60 s + 10 min`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SizeDeadline {
    /// Added for every compressed GB the disk line announces (default 60 s).
    pub per_gb: Duration,
    /// Added once, whatever the size (default 10 min).
    pub base: Duration,
}

impl SizeDeadline {
    /// The deadline for a disk of `gb` compressed GB whose download starts `now`.
    pub fn at(&self, now: Instant, gb: f64) -> Instant {
        let gb = if gb.is_finite() {
            gb.clamp(0.0, 1e4)
        } else {
            1e4
        };
        now + self.base + self.per_gb.mul_f64(gb)
    }
}

#[cfg(test)]
mod tests;
