//! Per-operation deadlines for [`crate::TartCli`], with the defaults of spec §7.4. Pure data;
//! enforcing them (SIGKILL of the process group) is [`crate::process`]'s job.

use std::time::Duration;

/// Per-operation deadlines (spec §7.4). On expiry the process group is SIGKILLed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadlines {
    /// `--version`.
    pub version: Duration,
    /// `list`.
    pub list: Duration,
    /// `get`.
    pub get: Duration,
    /// `set`.
    pub set: Duration,
    /// `delete`.
    pub delete: Duration,
    /// `clone` from a local VM. A remote source may pull first and gets
    /// `max(clone, pull)` plus the stall watchdog.
    pub clone: Duration,
    /// `pull` overall.
    pub pull: Duration,
    /// No new stdout line for this long kills a pull (or a remote clone), except while it is
    /// `waiting for lock...`.
    pub pull_stall: Duration,
    /// Added to `ip --wait`.
    pub ip_extra: Duration,
    /// Added to `stop --timeout`.
    pub stop_extra: Duration,
    /// `prune`.
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
            pull_stall: Duration::from_secs(10 * 60),
            ip_extra: Duration::from_secs(15),
            stop_extra: Duration::from_secs(15),
            prune: Duration::from_secs(10 * 60),
        }
    }
}
