//! One hook run against the guest, bounded by `limit`: `exec` through `tart exec` and `httpGet`
//! from the Mac to the guest with the handlers probes use too ([`crate::lifecycle::handlers`]),
//! `sleep`. The result is kubelet's: an exec hook fails on a non-zero exit; an HTTP hook fails
//! only when no response arrives (kubelet does not look at the status code of a lifecycle
//! hook's response).

use std::{net::Ipv4Addr, time::Duration};

use tart::{Tart, VmName};

use super::model::HookAction;
use crate::lifecycle::handlers::{
    exec::{self, ExecEnd},
    http::{HttpClient, HttpEnd},
};

/// Where a hook runs: the VM (for `exec`) and its guest's IP (for `httpGet`).
pub(crate) struct HookRunner<'a, T: Tart> {
    /// The driver.
    pub tart: &'a T,
    /// The Pod's VM.
    pub vm: &'a VmName,
    /// The guest's IP, once known.
    pub ip: Option<Ipv4Addr>,
}

/// Why a hook failed: kubelet's `error` and, for `exec`, the command's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HookFailure {
    /// What went wrong.
    pub error: String,
    /// stdout then stderr of an exec hook.
    pub output: String,
}

impl HookFailure {
    fn new(error: impl Into<String>) -> Self {
        Self {
            error: error.into(),
            output: String::new(),
        }
    }
}

/// Run `action` once, within `limit`.
///
/// # Cancellation
/// Dropping the future kills a `tart exec` (the tart crate's guard) and closes any socket.
pub(crate) async fn run<T: Tart>(
    r: &HookRunner<'_, T>,
    action: &HookAction,
    limit: Duration,
) -> Result<(), HookFailure> {
    match action {
        HookAction::Exec { command } => exec(r, command, limit).await,
        HookAction::HttpGet(get) => {
            let Some(ip) =
                r.ip.or_else(|| get.host.as_ref().map(|_| Ipv4Addr::UNSPECIFIED))
            else {
                return Err(HookFailure::new("the guest has no IP address"));
            };
            match HttpClient::new().get(get, ip, limit).await {
                // Any response, whatever its status or body, is a success.
                HttpEnd::Response { .. } => Ok(()),
                HttpEnd::Failed(m) => Err(HookFailure::new(m)),
            }
        }
        HookAction::Sleep(d) => {
            if *d > limit {
                tokio::time::sleep(limit).await;
                return Err(HookFailure::new(
                    "container terminated before sleep hook finished",
                ));
            }
            tokio::time::sleep(*d).await;
            Ok(())
        }
        HookAction::Invalid(why) => Err(HookFailure::new(why.clone())),
    }
}

async fn exec<T: Tart>(
    r: &HookRunner<'_, T>,
    command: &[String],
    limit: Duration,
) -> Result<(), HookFailure> {
    let shown = command.join(" ");
    let timed_out = || HookFailure::new(format!("command '{shown}' timed out"));
    if command.is_empty() {
        return Err(HookFailure::new("exec.command is empty"));
    }
    match exec::run(r.tart, r.vm, command, limit).await {
        ExecEnd::TimedOut => Err(timed_out()),
        ExecEnd::Exited(out) if out.exit_code == 0 => Ok(()),
        ExecEnd::Exited(out) => Err(HookFailure {
            error: format!(
                "command '{shown}' exited with {}: {}",
                out.exit_code, out.stderr
            ),
            output: format!("{}{}", out.stdout, out.stderr),
        }),
        ExecEnd::Failed(e) => Err(HookFailure::new(e.to_string())),
    }
}

#[cfg(test)]
mod tests;
