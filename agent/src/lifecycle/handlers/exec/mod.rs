//! The `exec` handler: the command runs in the guest through `tart exec`, bounded by a deadline
//! ([`run`], for probes and hooks alike). What its end means for a probe is [`outcome`]'s
//! (pure); a hook reads it in `hooks::run`.

use std::time::Duration;

use tart::{ErrorKind, ExecOutput, Tart, VmName};

use super::outcome::Outcome;

/// Most bytes of output kept, as kubelet's exec prober keeps (10 KiB).
pub(crate) const MAX_OUTPUT: usize = 10 << 10;

/// How one `tart exec` within its deadline ended.
#[derive(Debug)]
pub(crate) enum ExecEnd {
    /// The command ran to its end: its exit code and output.
    Exited(ExecOutput),
    /// The deadline passed (ours, or the one `tart exec` was given).
    TimedOut,
    /// `tart exec` failed otherwise.
    Failed(tart::Error),
}

impl From<tart::Result<ExecOutput>> for ExecEnd {
    fn from(result: tart::Result<ExecOutput>) -> Self {
        match result {
            Ok(out) => Self::Exited(out),
            Err(e) if e.kind() == ErrorKind::Timeout => Self::TimedOut,
            Err(e) => Self::Failed(e),
        }
    }
}

/// `tart exec <vm> <command…>`, bounded by `timeout`.
///
/// # Cancellation
/// Dropping the future kills the `tart exec` process group (the tart crate's guard).
pub(crate) async fn run<T: Tart>(
    tart: &T,
    vm: &VmName,
    command: &[String],
    timeout: Duration,
) -> ExecEnd {
    // The tart crate kills the group at the deadline; the outer bound holds for any `Tart`,
    // and dropping the call at it kills the group just the same.
    match tokio::time::timeout(timeout, tart.exec(vm, command, timeout)).await {
        Ok(result) => result.into(),
        Err(_) => ExecEnd::TimedOut,
    }
}

/// One probe attempt: [`run`], read by [`outcome`].
pub(crate) async fn check<T: Tart>(
    tart: &T,
    vm: &VmName,
    command: &[String],
    timeout: Duration,
) -> Outcome {
    outcome(command, run(tart, vm, command, timeout).await)
}

/// What one `tart exec` end means for the probe:
/// - exit 0: success; any other exit: failure with the guest command's output (stdout, then
///   stderr, at most [`MAX_OUTPUT`] bytes), as kubelet reports it;
/// - deadline passed: failure, kubelet's `command "…" timed out`;
/// - the guest agent did not answer (Tart's `Failed to connect to the VM using its control
///   socket`, classified `Other`): failure — a guest whose agent is gone is not healthy;
/// - anything else (VM missing or not running, `tart` missing, host faults): error, thrown away.
pub(crate) fn outcome(command: &[String], end: ExecEnd) -> Outcome {
    match end {
        ExecEnd::Exited(out) if out.exit_code == 0 => Outcome::Success,
        ExecEnd::Exited(out) => Outcome::Failure(combined(&out)),
        ExecEnd::TimedOut => timed_out(command),
        ExecEnd::Failed(e) if e.kind() == ErrorKind::Other => Outcome::Failure(e.message),
        ExecEnd::Failed(e) => Outcome::Error(e.to_string()),
    }
}

fn timed_out(command: &[String]) -> Outcome {
    Outcome::Failure(format!("command {:?} timed out", command.join(" ")))
}

/// stdout then stderr, cut to [`MAX_OUTPUT`] bytes at a character boundary. Tart hands the two
/// streams over apart, so their interleaving is lost.
fn combined(out: &ExecOutput) -> String {
    let mut s = String::with_capacity(out.stdout.len() + out.stderr.len());
    s.push_str(&out.stdout);
    s.push_str(&out.stderr);
    if s.len() > MAX_OUTPUT {
        let mut cut = MAX_OUTPUT;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
    }
    s
}

#[cfg(test)]
mod tests;
