//! Delivery of the guest launcher through the Tart Guest Agent (docs/guest.md, "Delivery"):
//! one `tart exec` runs `install.sh` as root (`sudo -n`: the exec user `admin` has
//! passwordless sudo in Cirrus Labs' images), which keeps an image's own launcher or writes the
//! shipped one and its LaunchDaemon plist and starts it with `launchctl bootstrap system`, so
//! the launcher belongs to launchd, not to the exec session, and outlives it and the agent.
//!
//! [`deliver`] is the one entry point (the worker's start and `doctor --smoke` share it);
//! [`argv`] and [`outcome`] are its pure halves. Deciding when to deliver, and what a guest
//! that never reports means for the Pod, is the caller's.

use std::time::Duration;

use tart::{ExecOutput, Tart, VmName};

/// The launcher the agent ships: the bytes of `packaging/guest/tart-guest-launcher`.
pub(crate) const LAUNCHER: &str = include_str!("../../../../packaging/guest/tart-guest-launcher");

/// Its LaunchDaemon: the bytes of `packaging/guest/dev.tart-kubelet.guest-launcher.plist`.
pub(crate) const PLIST: &str =
    include_str!("../../../../packaging/guest/dev.tart-kubelet.guest-launcher.plist");

/// The installer, run by `/bin/sh -c` in the guest.
const SCRIPT: &str = include_str!("install.sh");

/// `$0` of the installer in the guest's process table.
const SCRIPT_NAME: &str = "tart-kubelet-install";

/// Whether an image's own launcher is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Install {
    /// Keep the image's launcher when it has one (its LaunchDaemon plist is present).
    IfMissing,
    /// Stop the image's launcher, if any, and install the shipped one.
    Always,
}

impl Install {
    fn as_str(self) -> &'static str {
        match self {
            Self::IfMissing => "if-missing",
            Self::Always => "always",
        }
    }
}

/// What the installer found or did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Delivered {
    /// The image has its own launcher; nothing was installed.
    ImageHasOne,
    /// The shipped launcher was installed and started.
    Installed,
}

/// Why a delivery did not happen.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DeliveryError {
    /// No guest agent answered `tart exec` (an image without one, or one not up yet;
    /// docs/reference/tart-cli.md §2.10).
    #[error("the Tart Guest Agent did not answer")]
    NoGuestAgent(#[source] tart::Error),
    /// The guest agent ran the installer and it failed (for example `sudo` asks for a
    /// password).
    #[error("installing the guest launcher failed in the guest with exit code {code}")]
    Failed {
        /// The installer's exit code.
        code: i32,
        /// Its first line on stderr, printable ASCII only and cut short: guest-written, so
        /// only logged, never put in an event.
        detail: String,
    },
    /// `tart exec` itself failed otherwise (the VM stopped, a timeout).
    #[error("tart exec failed")]
    Exec(#[source] tart::Error),
}

/// The longest stderr line kept from the guest.
const DETAIL_MAX: usize = 160;

/// The `tart exec` command line after the VM name: the installer and, as its arguments, the
/// mode and the two files' bytes (no stdin needed; none of it is secret).
pub(crate) fn argv(install: Install) -> Vec<String> {
    [
        "sudo",
        "-n",
        "/bin/sh",
        "-c",
        SCRIPT,
        SCRIPT_NAME,
        install.as_str(),
        LAUNCHER,
        PLIST,
    ]
    .map(String::from)
    .to_vec()
}

/// What the installer's exit code and last stdout line say.
///
/// # Errors
/// [`DeliveryError::Failed`] for a non-zero exit or an answer that is neither word.
pub(crate) fn outcome(out: &ExecOutput) -> Result<Delivered, DeliveryError> {
    let word = out.stdout.lines().rev().find(|l| !l.trim().is_empty());
    match (out.exit_code, word.map(str::trim)) {
        (0, Some("image")) => Ok(Delivered::ImageHasOne),
        (0, Some("installed")) => Ok(Delivered::Installed),
        (code, _) => Err(DeliveryError::Failed {
            code,
            detail: printable_line(&out.stderr),
        }),
    }
}

/// The first non-empty line of `text`, printable ASCII only, at most [`DETAIL_MAX`] bytes.
fn printable_line(text: &str) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    line.chars()
        .filter(|c| c.is_ascii_graphic() || *c == ' ')
        .take(DETAIL_MAX)
        .collect()
}

/// Whether a failed `tart exec` means no guest agent answered: Tart's own text
/// (docs/reference/tart-cli.md §2.10).
fn no_agent(e: &tart::Error) -> bool {
    e.message
        .to_lowercase()
        .contains("failed to connect to the vm using its control socket")
}

/// Deliver the launcher into running VM `vm`, within `deadline`.
///
/// # Errors
/// [`DeliveryError`]: no guest agent, a failed installer, or a failed `tart exec`.
pub(crate) async fn deliver<T: Tart>(
    tart: &T,
    vm: &VmName,
    install: Install,
    deadline: Duration,
) -> Result<Delivered, DeliveryError> {
    match tart.exec(vm, &argv(install), deadline).await {
        Ok(out) => outcome(&out),
        Err(e) if no_agent(&e) => Err(DeliveryError::NoGuestAgent(e)),
        Err(e) => Err(DeliveryError::Exec(e)),
    }
}

#[cfg(test)]
mod tests;
