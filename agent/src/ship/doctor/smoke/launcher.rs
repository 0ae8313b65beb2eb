//! The self-test's wait for a guest launcher: what the Pod worker does for a Pod with a command
//! between the guest's IP and the container running (`pods/worker/launcher.rs`), with the same
//! pure decisions (`pods::launcher`): deliver the shipped launcher through the Tart Guest Agent
//! as the plan says, again after [`RETRY`] while no guest agent answers, until a launcher
//! reports in the status share or the deadline passes. [`launcher_detail`], pure, is the
//! step's detail.

use std::{path::Path, time::Duration};

use tart::{RunningVm, Tart, VmName};
use tokio::time::Instant;

use super::table::duration;
use crate::config::LauncherMode;
use crate::guest_contract::{
    deliver::{Delivered, DeliveryError, deliver},
    status::launcher_reported,
};
use crate::pods::launcher::{
    ANSWER_WAIT, EXEC_DEADLINE, LauncherOutcome, LauncherPlan, POLL, RETRY, failed_message,
    missing_message,
};

/// Wait until a launcher reports in `status` (`vm`'s status share) within `timeout`,
/// delivering one as `plan` says. Returns the delivery's answer (`None`: none was tried, or it
/// had not answered when the launcher reported).
///
/// # Errors
/// The worker's `GuestLauncherMissing` or `GuestLauncherFailed` message, or that the VM
/// stopped first.
pub(crate) async fn await_launcher<T: Tart>(
    tart: &T,
    vm: &VmName,
    proc: &T::Vm,
    status: &Path,
    plan: LauncherPlan,
    timeout: Duration,
) -> Result<Option<Delivered>, String> {
    let deadline = Instant::now() + timeout;
    let install = match plan {
        LauncherPlan::Deliver(i) => Some(i),
        LauncherPlan::None | LauncherPlan::WaitForImage => None,
    };
    let start = |i| {
        let left = deadline.saturating_duration_since(Instant::now());
        Box::pin(deliver(tart, vm, i, EXEC_DEADLINE.min(left)))
    };
    let mut attempt = install.map(start);
    let (mut next_try, mut delivered, mut agent_answered) = (None, None, false);
    let mut poll = tokio::time::interval(POLL);
    loop {
        if launcher_reported(status) {
            // A delivered launcher can report before its installer's answer is back: the
            // answer says whose launcher this is.
            if let Some(a) = attempt.take()
                && let Ok(Ok(d)) = tokio::time::timeout(ANSWER_WAIT, a).await
            {
                delivered = Some(d);
            }
            return Ok(delivered);
        }
        tokio::select! {
            r = async { attempt.as_mut().expect("guarded").await }, if attempt.is_some() => {
                attempt = None;
                match r {
                    Ok(d) => (agent_answered, delivered) = (true, Some(d)),
                    Err(DeliveryError::Failed { code, .. }) => return Err(failed_message(code)),
                    Err(_) => next_try = Some(Instant::now() + RETRY),
                }
            }
            _ = poll.tick() => {
                if let (Some(i), Some(t)) = (install, next_try)
                    && attempt.is_none()
                    && Instant::now() >= t
                {
                    next_try = None;
                    attempt = Some(start(i));
                }
            }
            () = tokio::time::sleep_until(deadline) => {
                return Err(missing_message(plan, agent_answered, timeout));
            }
            _ = proc.wait() => return Err("the VM stopped before a launcher reported".to_owned()),
        }
    }
}

/// The `launcher` step's detail once a launcher reported: whose it is (the delivery's answer,
/// `None` when none was tried or none answered, as the worker counts it), under `mode`, and how
/// long after `tart run` (`since_run`).
pub(crate) fn launcher_detail(
    delivered: Option<Delivered>,
    mode: LauncherMode,
    since_run: Duration,
) -> String {
    let whose = match LauncherOutcome::reported(delivered) {
        LauncherOutcome::Delivered => {
            "the shipped launcher, delivered through the Tart Guest Agent,"
        }
        _ => "the image's own launcher",
    };
    format!(
        "{whose} reported {} after tart run (launcher mode {})",
        duration(since_run),
        mode.as_str()
    )
}
