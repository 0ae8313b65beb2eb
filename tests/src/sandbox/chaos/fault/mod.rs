//! The chaos fault kinds and the pure rule for which of them may be injected now: faults that
//! concern a whole agent (a restart, a duplicate, the API server going away) are serialised so
//! that each one's outcome can be measured on its own.

use std::time::Duration;

/// One kind of injected fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Fault {
    /// The next `tart clone` hangs (killed at its deadline, retried).
    HangClone,
    /// The next `tart pull` stalls at 30 % (killed by the watchdog, retried).
    StallPull,
    /// The next `tart run` hits the two-VM limit (Pod stays Pending, retried).
    VmLimit,
    /// The next `tart run` fails to lock auxiliary storage (host fault, retried).
    AuxStorageLocked,
    /// Guests started in the next few seconds crash with exit 1 (Pods end Failed).
    CrashWindow,
    /// The agent is SIGKILLed and started again (VMs must be adopted, not restarted).
    AgentRestart,
    /// kube-apiserver is stopped for longer than the node-monitor grace, then started again.
    ApiRestart,
    /// A second agent is started for a Mac with the same node name and `TART_HOME`; it must
    /// refuse to run and exit non-zero by itself.
    DuplicateAgent,
}

impl Fault {
    /// Every kind, in the order the injector draws from.
    pub const ALL: [Fault; 8] = [
        Fault::HangClone,
        Fault::StallPull,
        Fault::VmLimit,
        Fault::AuxStorageLocked,
        Fault::CrashWindow,
        Fault::AgentRestart,
        Fault::ApiRestart,
        Fault::DuplicateAgent,
    ];

    /// The report's name for the kind.
    pub fn as_str(self) -> &'static str {
        match self {
            Fault::HangClone => "hang_clone",
            Fault::StallPull => "stall_pull",
            Fault::VmLimit => "vm_limit",
            Fault::AuxStorageLocked => "aux_storage_locked",
            Fault::CrashWindow => "crash_window",
            Fault::AgentRestart => "agent_restart",
            Fault::ApiRestart => "api_restart",
            Fault::DuplicateAgent => "duplicate_agent",
        }
    }
}

/// Agent-level faults in progress when the injector draws the next one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Busy {
    /// The API server is down, or the Nodes' recovery after its return is being measured.
    pub api_restart: bool,
    /// Time since the last API restart's measurement ended (`None`: there was none yet).
    pub since_api_restart: Option<Duration>,
    /// A duplicate agent is running for this simulated Mac (index).
    pub duplicate_on: Option<usize>,
}

/// Least time between the end of one API restart's measurement and the next outage, so the
/// workload keeps making progress between outages.
pub const API_RESTART_SPACING: Duration = Duration::from_secs(60);

/// Why `fault` on Mac `target` cannot be injected now, or `None` when it can. fake-tart
/// faults are always allowed; agent-level faults never overlap an API restart, a duplicate
/// is never started beside another one or on a Mac whose agent is being restarted, and an
/// API restart waits for a running duplicate and for [`API_RESTART_SPACING`].
pub fn blocked(fault: Fault, target: usize, busy: Busy) -> Option<&'static str> {
    match fault {
        Fault::HangClone
        | Fault::StallPull
        | Fault::VmLimit
        | Fault::AuxStorageLocked
        | Fault::CrashWindow => None,
        _ if busy.api_restart => Some("an API server restart is in progress"),
        Fault::AgentRestart if busy.duplicate_on == Some(target) => {
            Some("a duplicate agent runs for this Mac")
        }
        Fault::AgentRestart => None,
        Fault::DuplicateAgent if busy.duplicate_on.is_some() => {
            Some("a duplicate agent is already running")
        }
        Fault::DuplicateAgent => None,
        Fault::ApiRestart if busy.duplicate_on.is_some() => Some("a duplicate agent is running"),
        Fault::ApiRestart
            if busy
                .since_api_restart
                .is_some_and(|d| d < API_RESTART_SPACING) =>
        {
            Some("the last API server restart was too recent")
        }
        Fault::ApiRestart => None,
    }
}

#[cfg(test)]
mod tests;
