//! The one wait for a guest launcher, shared by the Pod worker (`pods/worker/launcher.rs`) and
//! `doctor --smoke` (`ship/doctor/smoke/launcher.rs`): deliver the shipped launcher through the
//! Tart Guest Agent as the plan says, again after [`RETRY`] while no guest agent answers, until a
//! launcher reports in the status share, the deadline passes, or the caller's `stop` ends first.

use std::{future::Future, path::Path, time::Duration};

use tart::{Tart, VmName};
use tokio::time::Instant;
use tracing::{debug, warn};

use super::{
    ANSWER_WAIT, EXEC_DEADLINE, LauncherPlan, POLL, RETRY, failed_message, missing_message,
};
use crate::guest_contract::{
    deliver::{Delivered, DeliveryError, deliver},
    status::launcher_reported,
};

/// How the wait ended.
pub(crate) enum Waited<S> {
    /// A launcher reported; the delivery's answer (`None`: none was tried, or it had not
    /// answered when the launcher reported).
    Reported(Option<Delivered>),
    /// The guest agent ran the installer and it failed: the `GuestLauncherFailed` message.
    Failed(String),
    /// Nothing reported within the deadline: the `GuestLauncherMissing` message.
    Missing(String),
    /// The caller's `stop` ended first.
    Stopped(S),
}

/// Wait until a launcher reports in `status` (`vm`'s status share) within `timeout`,
/// delivering one as `plan` says, or until `stop` ends.
pub(crate) async fn wait_for_launcher<T: Tart, S>(
    tart: &T,
    vm: &VmName,
    status: &Path,
    plan: LauncherPlan,
    timeout: Duration,
    stop: impl Future<Output = S>,
) -> Waited<S> {
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
    let mut stop = std::pin::pin!(stop);
    loop {
        if launcher_reported(status) {
            // A delivered launcher can report before its installer's answer is back: the
            // answer says whose launcher this is.
            if let Some(a) = attempt.take()
                && let Ok(Ok(d)) = tokio::time::timeout(ANSWER_WAIT, a).await
            {
                delivered = Some(d);
            }
            return Waited::Reported(delivered);
        }
        tokio::select! {
            r = async { attempt.as_mut().expect("guarded").await }, if attempt.is_some() => {
                attempt = None;
                match r {
                    Ok(d) => {
                        (agent_answered, delivered) = (true, Some(d));
                        debug!(?d, "guest launcher delivery answered");
                    }
                    Err(DeliveryError::Failed { code, detail }) => {
                        warn!(code, %detail, "installing the guest launcher failed in the guest");
                        return Waited::Failed(failed_message(code));
                    }
                    Err(e) => {
                        debug!(error = %e, "guest launcher delivery: no answer yet");
                        next_try = Some(Instant::now() + RETRY);
                    }
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
                return Waited::Missing(missing_message(plan, agent_answered, timeout));
            }
            s = &mut stop => return Waited::Stopped(s),
        }
    }
}
