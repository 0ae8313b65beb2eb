//! The self-test's wait for a guest launcher: the Pod worker's own wait
//! (`pods::launcher::wait`), ended early when the VM stops, with its outcome as
//! the step's result. [`launcher_detail`], pure, is the step's detail.

use std::{path::Path, time::Duration};

use tart::{RunningVm, Tart, VmName};

use super::table::duration;
use crate::config::LauncherMode;
use crate::guest_contract::deliver::Delivered;
use crate::pods::launcher::{
    LauncherOutcome, LauncherPlan,
    wait::{Waited, wait_for_launcher},
};

/// Wait until a launcher reports in `status` (`vm`'s status share) within `timeout`,
/// delivering one as `plan` says (`pods::launcher::wait`). Returns the delivery's
/// answer (`None`: none was tried, or it had not answered when the launcher reported).
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
    match wait_for_launcher(tart, vm, status, plan, timeout, proc.wait()).await {
        Waited::Reported(delivered) => Ok(delivered),
        Waited::Failed(message) | Waited::Missing(message) => Err(message),
        Waited::Stopped(_) => Err("the VM stopped before a launcher reported".to_owned()),
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
