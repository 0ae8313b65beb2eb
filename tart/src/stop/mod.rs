//! The graceful stop sequence for a `tart run` process
//! (docs/reference/tart-cli.md §2.7, §3.2, §7.3):
//!
//! 1. SIGUSR2: ask the guest OS to shut down; wait up to `grace - reserve`
//!    (`reserve = min(5 s, grace / 4)`);
//! 2. `tart stop <vm> --timeout <reserve>` (SIGINT: hard power-off, clean for Tart), then wait
//!    up to [`AFTER_TART_STOP`] for our process to exit;
//!    if `tart stop` says "not running" while our process lives, it is still starting up
//!    (docs/reference/tart-cli.md §2.7 race): SIGINT it ourselves and wait up to `reserve`;
//! 3. SIGKILL the process group and wait up to [`AFTER_KILL`].
//!
//! Running `tart stop` is injected as a closure so the sequence can be tested with plain
//! processes.

use std::{future::Future, time::Duration};

use nix::sys::signal::Signal;
use tracing::{debug, warn};

use crate::{
    Error, ErrorKind, ExitInfo, ExitReason, Op, Result, StopOutcome,
    running::{RunningVm, VmProcess},
    signal,
};

/// Wait for the run process after `tart stop` returned.
pub(crate) const AFTER_TART_STOP: Duration = Duration::from_secs(10);
/// Wait for the run process after SIGKILL.
pub(crate) const AFTER_KILL: Duration = Duration::from_secs(10);

/// Split `grace` into the time the guest gets and the `tart stop --timeout` reserve.
pub(crate) fn split_grace(grace: Duration) -> (Duration, Duration) {
    let reserve = (grace / 4).min(Duration::from_secs(5));
    (grace - reserve, reserve)
}

/// `--timeout` for `tart stop`: the reserve rounded up to whole seconds.
pub(crate) fn tart_stop_timeout(reserve: Duration) -> Duration {
    Duration::from_secs(reserve.as_secs_f64().ceil() as u64)
}

/// Run the sequence. `tart_stop(timeout)` must run `tart stop <vm> --timeout <timeout>` with
/// its own deadline.
///
/// # Errors
/// `Timeout` when the process survived SIGKILL for [`AFTER_KILL`].
pub(crate) async fn stop_sequence<F, Fut>(
    vm: &VmProcess,
    grace: Duration,
    tart_stop: F,
) -> Result<StopOutcome>
where
    F: FnOnce(Duration) -> Fut,
    Fut: Future<Output = Result<()>>,
{
    if !vm.is_alive() {
        return Ok(StopOutcome::AlreadyStopped);
    }
    let (guest_time, reserve) = split_grace(grace);

    // 1. Ask the guest (docs/reference/tart-cli.md §3.2 SIGUSR2 → requestStop).
    match signal::send(vm.pid(), Signal::SIGUSR2) {
        Ok(true) => {}
        Ok(false) => {
            // Gone between the check and the signal.
            vm.wait_for(AFTER_KILL).await;
            return Ok(StopOutcome::AlreadyStopped);
        }
        Err(e) => warn!(vm = %vm.name(), error = %e, "sigusr2 failed"),
    }
    if vm.wait_for(guest_time).await.is_some() {
        debug!(vm = %vm.name(), "guest shut down");
        return Ok(StopOutcome::GuestShutdown);
    }

    // 2. `tart stop`.
    match tart_stop(tart_stop_timeout(reserve)).await {
        Ok(()) => {
            if let Some(exit) = vm.wait_for(AFTER_TART_STOP).await {
                return Ok(outcome_after_tart_stop(&exit));
            }
        }
        Err(e) if e.kind == ErrorKind::NotRunning && vm.is_alive() => {
            // docs/reference/tart-cli.md §2.7: before it takes the config.json lock, `tart stop`
            // cannot see it.
            debug!(vm = %vm.name(), "tart stop saw nothing running; sigint to our process");
            let _ = signal::send(vm.pid(), Signal::SIGINT);
            if let Some(exit) = vm.wait_for(reserve.max(Duration::from_secs(1))).await {
                return Ok(outcome_after_tart_stop(&exit));
            }
        }
        Err(e) => {
            if !vm.is_alive() {
                return Ok(StopOutcome::TartStop);
            }
            warn!(vm = %vm.name(), kind = e.kind.as_str(), error = %e, "tart stop failed");
        }
    }

    // 3. SIGKILL the group. Only while it is alive: once reaped, its pid may be reused.
    if !vm.is_alive() {
        return Ok(StopOutcome::TartStop);
    }
    signal::kill_leader(vm.pid());
    if vm.wait_for(AFTER_KILL).await.is_some() {
        return Ok(StopOutcome::Killed);
    }
    Err(Error::new(
        Op::Stop,
        ErrorKind::Timeout,
        None,
        format!("tart run pid {} survived SIGKILL", vm.pid()),
    ))
}

/// `tart stop` SIGKILLs the run process itself when it ignores SIGINT for the timeout.
fn outcome_after_tart_stop(exit: &ExitInfo) -> StopOutcome {
    if exit.reason == ExitReason::Signaled && exit.signal == Some(Signal::SIGKILL as i32) {
        StopOutcome::Killed
    } else {
        StopOutcome::TartStop
    }
}

#[cfg(test)]
mod tests;
