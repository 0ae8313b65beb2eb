//! Termination that never cuts a busy job short: the pure rules. On deletion the worker runs
//! the container's `preStop` hook, then, while the job says it is busy, waits for it until the
//! grace period runs out, then asks the guest to shut down. The job's busy/idle mark comes from
//! the status share ([`crate::guest_contract::job`]; docs/guest.md, "Busy and idle"). Pure; the
//! time is passed in.

use std::time::Duration;

use tokio::time::Instant;

/// The least time a VM is given to shut down once it is asked to, even when the grace period
/// is spent (kubelet's `minimumGracePeriodInSeconds`).
pub(crate) const MIN_STOP_GRACE: Duration = Duration::from_secs(2);

/// How often a running job's busy/idle mark is read.
pub(crate) const JOB_POLL: Duration = Duration::from_secs(1);

/// One deletion as the worker lives it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TermClock {
    /// When the worker first saw the deletion.
    pub started: Instant,
    /// The worker waited for a busy job.
    pub waited: bool,
    /// How it ended, once the VM was asked to stop.
    pub how: Option<TerminationHow>,
    /// `pod_termination_seconds` was observed.
    pub observed: bool,
}

/// How a terminated Pod's VM went away (`how` label of `pod_termination_seconds`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum TerminationHow {
    /// The job was idle (or ended): the VM was stopped at once after `preStop`.
    Idle,
    /// The job was busy; it went idle or ended within the grace period.
    Waited,
    /// The job was still busy when the grace period ran out.
    GraceExpired,
}

impl TerminationHow {
    /// Every value, for pre-creating metric series.
    pub(crate) const ALL: [TerminationHow; 3] = [Self::Idle, Self::Waited, Self::GraceExpired];

    /// Metric label value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Idle => "idle",
            Self::Waited => "waited",
            Self::GraceExpired => "grace_expired",
        }
    }
}

/// How the termination ends, given whether the worker waited for the job and whether the job is
/// still busy when the VM is stopped.
pub(crate) fn termination_how(waited: bool, busy_at_stop: bool) -> TerminationHow {
    match (waited, busy_at_stop) {
        (_, true) => TerminationHow::GraceExpired,
        (true, false) => TerminationHow::Waited,
        (false, false) => TerminationHow::Idle,
    }
}

/// The grace `tart stop` gets: what is left of the Pod's, never less than [`MIN_STOP_GRACE`].
pub(crate) fn stop_grace(deadline: Instant, now: Instant) -> Duration {
    deadline.saturating_duration_since(now).max(MIN_STOP_GRACE)
}

#[cfg(test)]
mod tests;
