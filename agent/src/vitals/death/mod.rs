//! PURE: why a job's VM ended abnormally, from how it ended and the last vitals samples, and
//! the short text that says so in the Pod's terminated message and its Warning event.
//!
//! A job's own failure is the job's (`Error`), a guest out of memory is `OOMKilled`; an end
//! that came from the host — critical host memory pressure, the VM killed from outside, a
//! Virtualization.framework fault — marks the Pod `DisruptionTarget=True` with its own reason,
//! so a Job's `podFailurePolicy` can ignore it (docs/pods.md, "When a VM dies").

use super::model::{GuestSample, HostSample, PressureLevel};

/// The closed set of causes (the `cause` label of `tart_kubelet_vm_deaths_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum DeathCause {
    /// The workload ran the guest out of memory.
    OomKilled,
    /// The host was under critical memory pressure when the VM died.
    HostMemoryPressure,
    /// The VM's process was killed by someone other than the agent.
    KilledFromOutside,
    /// Virtualization.framework stopped the VM with an error, or refused it (VM limit).
    HostFault,
    /// The job failed on its own.
    JobError,
}

impl DeathCause {
    pub(crate) const ALL: [DeathCause; 5] = [
        DeathCause::OomKilled,
        DeathCause::HostMemoryPressure,
        DeathCause::KilledFromOutside,
        DeathCause::HostFault,
        DeathCause::JobError,
    ];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::OomKilled => "oom_killed",
            Self::HostMemoryPressure => "host_memory_pressure",
            Self::KilledFromOutside => "killed_from_outside",
            Self::HostFault => "host_fault",
            Self::JobError => "job_error",
        }
    }
}

/// A fault of the host that `tart run`'s own output names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HostFaultKind {
    /// Apple's VM limit (docs/reference/tart-cli.md §3.4).
    VmLimit,
    /// `guest has stopped the virtual machine due to error`, a `VZErrorDomain` error.
    Virtualization,
}

/// The host fault named in the last lines of `tart run`'s output, if any
/// (docs/reference/tart-cli.md §2.6).
pub(crate) fn host_fault_in(run_output_tail: &str) -> Option<HostFaultKind> {
    let t = run_output_tail;
    if t.contains("exceeds the system limit")
        || t.contains("maximum supported number of active virtual machines")
    {
        Some(HostFaultKind::VmLimit)
    } else if t.contains("stopped the virtual machine due to error") || t.contains("VZErrorDomain")
    {
        Some(HostFaultKind::Virtualization)
    } else {
        None
    }
}

/// How the run ended, as the worker saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ending {
    /// The exit code the guest launcher reported; `None` when it reported none.
    pub guest_exit: Option<i32>,
    /// A command was running in the guest (the launcher did not report `idle`).
    pub command_ran: bool,
    /// `tart run`'s exit code (128 + signal when signalled).
    pub tart_code: i32,
    /// `tart run` ended by a signal.
    pub tart_signaled: bool,
    /// The host fault `tart run`'s output names.
    pub fault: Option<HostFaultKind>,
    /// The guest's last sample is older than three sampling intervals.
    pub guest_silent: bool,
}

/// What the Pod says about a death.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Verdict {
    pub cause: DeathCause,
    /// The `DisruptionTarget` condition's reason, when the host caused the end.
    pub disruption: Option<&'static str>,
    /// One line for the terminated message and the Warning event.
    pub summary: String,
}

impl Verdict {
    /// The terminated reason's word: `OOMKilled` or `Error`.
    pub(crate) fn oom(&self) -> bool {
        self.cause == DeathCause::OomKilled
    }

    /// The Warning event's reason.
    pub(crate) fn event_reason(&self) -> &'static str {
        match (self.cause, self.disruption) {
            (DeathCause::OomKilled, _) => "OOMKilled",
            (_, Some(r)) => r,
            _ => "JobFailed",
        }
    }
}

/// Whether the run ended abnormally, and why; `None` for a clean end.
pub(crate) fn classify(
    end: &Ending,
    guest: &[GuestSample],
    host: &[HostSample],
) -> Option<Verdict> {
    let abnormal = match end.guest_exit {
        Some(code) => code != 0,
        None => end.command_ran || end.tart_code != 0 || end.fault.is_some(),
    };
    if !abnormal {
        return None;
    }
    let g = guest.last();
    let jetsam = g.and_then(|s| s.jetsam_kills).unwrap_or(0);
    let guest_critical = g.and_then(|s| s.pressure) == Some(PressureLevel::Critical);
    let killed_code = |c: i32| c == 137 || c == 9;
    let host_critical = host
        .iter()
        .rev()
        .take(3)
        .any(|s| s.pressure == Some(PressureLevel::Critical));
    let (cause, disruption) = if let Some(kind) = end.fault {
        let reason = match kind {
            HostFaultKind::VmLimit => "VMLimitReached",
            HostFaultKind::Virtualization => "VirtualizationError",
        };
        (DeathCause::HostFault, Some(reason))
    } else if let Some(code) = end.guest_exit {
        if jetsam > 0 || (guest_critical && killed_code(code)) {
            (DeathCause::OomKilled, None)
        } else {
            (DeathCause::JobError, None)
        }
    } else if host_critical {
        (DeathCause::HostMemoryPressure, Some("HostMemoryPressure"))
    } else if jetsam > 0 && guest_critical {
        (DeathCause::OomKilled, None)
    } else if end.tart_signaled || end.tart_code != 0 {
        (DeathCause::KilledFromOutside, Some("VMKilledFromOutside"))
    } else {
        (DeathCause::JobError, None)
    };
    let summary = summary(cause, end, guest, host);
    Some(Verdict {
        cause,
        disruption,
        summary,
    })
}

fn summary(cause: DeathCause, end: &Ending, guest: &[GuestSample], host: &[HostSample]) -> String {
    let head = match cause {
        DeathCause::OomKilled => "the guest ran out of memory".to_owned(),
        DeathCause::HostMemoryPressure => {
            "the VM died while the host was under critical memory pressure".to_owned()
        }
        DeathCause::KilledFromOutside => "the VM was killed from outside the agent".to_owned(),
        DeathCause::HostFault => "Virtualization.framework stopped the VM".to_owned(),
        DeathCause::JobError => match end.guest_exit {
            Some(c) => format!("the job exited with {c}"),
            None => "the VM stopped without the job reporting its end".to_owned(),
        },
    };
    let mut parts = vec![head];
    if end.guest_silent {
        parts.push("the guest had stopped reporting vitals".to_owned());
    }
    let last = |n: usize| guest.iter().rev().take(n).rev();
    if !guest.is_empty() {
        let free: Vec<String> = last(3)
            .map(|s| s.free_percent.map_or("?".into(), |p| format!("{p}%")))
            .collect();
        let pressure: Vec<&str> = last(3)
            .map(|s| s.pressure.map_or("?", PressureLevel::as_str))
            .collect();
        let mut g = format!(
            "guest memory free {} pressure {}",
            free.join(","),
            pressure.join(",")
        );
        if let Some(s) = guest.last() {
            if let Some(b) = s.swap_used_bytes {
                g.push_str(&format!(" swap {}", mib(b)));
            }
            if let Some(k) = s.jetsam_kills.filter(|k| *k > 0) {
                g.push_str(&format!(" jetsam kills {k}"));
            }
        }
        parts.push(g);
    } else {
        parts.push("no guest vitals".to_owned());
    }
    if let Some(h) = host.last() {
        let mut s = format!(
            "host pressure {}",
            h.pressure.map_or("?", PressureLevel::as_str)
        );
        if let Some(p) = h.free_percent {
            s.push_str(&format!(" free {p}%"));
        }
        if let Some(b) = h.swap_used_bytes {
            s.push_str(&format!(" swap {}", mib(b)));
        }
        parts.push(s);
    }
    parts.join("; ")
}

fn mib(b: u64) -> String {
    format!("{}Mi", b >> 20)
}

#[cfg(test)]
mod tests;
