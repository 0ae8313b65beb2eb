//! Where a Pod's guest launcher comes from (docs/guest.md, "Which image do I need"): the
//! Node's mode (`--guest-launcher`), overridden by the Pod's annotation
//! [`ANNOTATION`], decides whether the worker delivers the shipped launcher through the Tart
//! Guest Agent after `tart run`, and how long it waits for the launcher to report. The decisions
//! are pure; `wait.rs` is the one wait both the worker and `doctor --smoke` use, and
//! `guest_contract::deliver` does the delivery.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;

use crate::config::LauncherMode;
use crate::guest_contract::deliver::{Delivered, Install};

/// The Pod annotation that overrides the Node's launcher mode.
pub(crate) const ANNOTATION: &str = "tart.run/guest-launcher";

/// How often the worker looks at the status share while it waits for a launcher.
pub(crate) const POLL: Duration = Duration::from_millis(100);

/// After a `tart exec` that found no guest agent, how long before the next try (Tart itself
/// takes about 10 s to give up, docs/reference/tart-cli.md §2.10).
pub(crate) const RETRY: Duration = Duration::from_secs(1);

/// The longest one delivery's `tart exec` may take.
pub(crate) const EXEC_DEADLINE: Duration = Duration::from_secs(60);

/// How long a launcher that reported waits for the answer of a delivery in flight (which
/// tells whether it is the delivered one) before it counts as the image's.
pub(crate) const ANSWER_WAIT: Duration = Duration::from_secs(5);

/// The Pod's launcher mode: its annotation, else `node`.
///
/// # Errors
/// The message for an annotation that names no mode (admission rejects the Pod with it).
pub(crate) fn mode_of(pod: &Pod, node: LauncherMode) -> Result<LauncherMode, String> {
    let Some(word) = pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(ANNOTATION))
    else {
        return Ok(node);
    };
    LauncherMode::parse(word).ok_or_else(|| {
        let modes: Vec<&str> = LauncherMode::ALL.iter().map(|m| m.as_str()).collect();
        format!(
            "annotation {ANNOTATION}: {word:?} is not a launcher mode (one of {})",
            modes.join(", ")
        )
    })
}

/// Whether the container gives the guest something to run: a `command` or `args`. A Pod
/// with neither only wants the VM (whatever the image starts itself), so no launcher is
/// waited for and none delivered, as before the launcher could be delivered.
pub(crate) fn runs_command(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.containers.first())
        .is_some_and(|c| {
            c.command.as_ref().is_some_and(|v| !v.is_empty())
                || c.args.as_ref().is_some_and(|v| !v.is_empty())
        })
}

/// What the worker does between the guest's IP and reporting the container running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LauncherPlan {
    /// Nothing: the Pod only wants the VM.
    None,
    /// Wait for the image's own launcher to report.
    WaitForImage,
    /// Deliver (`Install`), and wait for the launcher to report.
    Deliver(Install),
}

/// The plan for a Pod in `mode` that does (`runs_command`) or does not give the guest
/// something to run.
pub(crate) fn plan(mode: LauncherMode, runs_command: bool) -> LauncherPlan {
    match (runs_command, mode) {
        (false, _) => LauncherPlan::None,
        (true, LauncherMode::Baked) => LauncherPlan::WaitForImage,
        (true, LauncherMode::Auto) => LauncherPlan::Deliver(Install::IfMissing),
        (true, LauncherMode::Deliver) => LauncherPlan::Deliver(Install::Always),
    }
}

/// How a start attempt's wait for the launcher ended (`outcome` label of
/// `tart_kubelet_guest_launchers_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LauncherOutcome {
    /// The image's own launcher reported.
    Image,
    /// The shipped launcher, delivered, reported.
    Delivered,
    /// Nothing reported within the deadline: no launcher and no guest agent.
    Missing,
    /// The guest agent answered but installing the launcher failed.
    Failed,
}

impl LauncherOutcome {
    /// Every outcome, for pre-registering metric label sets.
    pub(crate) const ALL: [LauncherOutcome; 4] =
        [Self::Image, Self::Delivered, Self::Missing, Self::Failed];

    /// Label value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Image => "image",
            Self::Delivered => "delivered",
            Self::Missing => "missing",
            Self::Failed => "failed",
        }
    }

    /// The outcome of a launcher that reported, given what the delivery did (`None`: none
    /// was tried or it has not answered).
    pub(crate) fn reported(delivered: Option<Delivered>) -> Self {
        match delivered {
            Some(Delivered::Installed) => Self::Delivered,
            Some(Delivered::ImageHasOne) | None => Self::Image,
        }
    }
}

/// The waiting message of a start attempt that ended with no launcher reporting within
/// `deadline`: what was tried says what is missing.
pub(crate) fn missing_message(
    plan: LauncherPlan,
    agent_answered: bool,
    deadline: Duration,
) -> String {
    let secs = deadline.as_secs();
    match (plan, agent_answered) {
        (LauncherPlan::WaitForImage, _) => format!(
            "the image's tart-kubelet launcher did not report within {secs}s (launcher mode baked); see docs/guest.md"
        ),
        (_, true) => format!(
            "the guest launcher did not report within {secs}s of being started; see docs/guest.md"
        ),
        (_, false) => format!(
            "the image has neither the tart-kubelet launcher nor the Tart Guest Agent: nothing reported within {secs}s; see docs/guest.md"
        ),
    }
}

/// The waiting message of a start attempt whose delivery the guest agent ran but whose
/// installer exited with `code` (its stderr is guest-written, so it is left out).
pub(crate) fn failed_message(code: i32) -> String {
    format!(
        "installing the tart-kubelet launcher through the Tart Guest Agent failed with exit code {code} (does the exec user have passwordless sudo?); see docs/guest.md"
    )
}

#[cfg(test)]
mod tests;
pub(crate) mod wait;
