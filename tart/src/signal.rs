//! Signals to processes and process groups by PID. A PID that does not fit, or is 0 or 1, is
//! refused: `kill(0)` reaches our own group, `kill(-1)` every process, and 1 is init.
//!
//! Which signal to send, and when, is the callers' decision: short commands killed at their
//! deadline, orphaned commands of an earlier agent, `tart run` processes and the stop sequence.

use nix::{
    errno::Errno,
    sys::signal::{Signal, kill, killpg},
    unistd::{Pid, getpgid},
};

/// `p` as a PID that is safe to signal: `EINVAL` for 0, 1 and values past `i32::MAX`.
fn pid(p: u32) -> nix::Result<Pid> {
    match i32::try_from(p) {
        Ok(raw) if raw > 1 => Ok(Pid::from_raw(raw)),
        _ => Err(Errno::EINVAL),
    }
}

/// Send `sig` to process `p`. `Ok(false)` when it no longer exists.
///
/// # Errors
/// An unsafe PID (`EINVAL`) or any other `kill(2)` failure.
pub(crate) fn send(p: u32, sig: Signal) -> nix::Result<bool> {
    match kill(pid(p)?, sig) {
        Ok(()) => Ok(true),
        Err(Errno::ESRCH) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Whether process `p` exists (`kill(p, 0)`).
pub(crate) fn alive(p: u32) -> bool {
    pid(p).is_ok_and(|p| kill(p, None).is_ok())
}

/// SIGKILL process group `pgid`, ignoring "no such group".
pub(crate) fn kill_group(pgid: u32) {
    if let Ok(p) = pid(pgid) {
        let _ = killpg(p, Signal::SIGKILL);
    }
}

/// SIGKILL process `p` and, when it leads its own process group, the whole group.
pub(crate) fn kill_leader(p: u32) {
    let Ok(p) = pid(p) else { return };
    if getpgid(Some(p)) == Ok(p) {
        let _ = killpg(p, Signal::SIGKILL);
    } else {
        let _ = kill(p, Signal::SIGKILL);
    }
}
