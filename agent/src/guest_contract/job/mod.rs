//! The job's busy/idle mark in the status share (docs/guest.md, "Busy and idle"): what the
//! guest's job says about itself, and the parser of the `job` file's content. Pure.

/// What the job says about itself, read from the status share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JobActivity {
    /// The job marked itself busy.
    Busy,
    /// The job marked itself idle (or has not marked itself busy since it started).
    Idle,
    /// The job has ended (the launcher wrote its exit, or the VM stopped).
    Ended,
}

impl JobActivity {
    /// Whether a deletion waits for the job.
    pub(crate) fn is_busy(self) -> bool {
        self == Self::Busy
    }

    /// The `tart.run/JobBusy` condition's status and reason.
    pub(crate) fn condition(self) -> (bool, &'static str) {
        match self {
            Self::Busy => (true, "JobBusy"),
            Self::Idle => (false, "JobIdle"),
            Self::Ended => (false, "JobEnded"),
        }
    }
}

/// The job file's content (`busy` or `idle`, a newline allowed): `None` when it says neither,
/// e.g. read while the job rewrites it, so the last mark read stays in force.
pub(crate) fn parse_job_mark(s: &str) -> Option<JobActivity> {
    match s.trim() {
        "busy" => Some(JobActivity::Busy),
        "idle" => Some(JobActivity::Idle),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
