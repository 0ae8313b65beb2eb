//! The hooks of a container and kubelet's words for their failures. Pure.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, LifecycleHandler};

use crate::lifecycle::{handlers::model::HttpGet, probes::model::http_get};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum HookKind {
    /// `lifecycle.postStart`: runs once the guest has an IP.
    PostStart,
    /// `lifecycle.preStop`: runs first when the Pod is deleted.
    PreStop,
}

impl HookKind {
    /// Metric label and log value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::PostStart => "post_start",
            Self::PreStop => "pre_stop",
        }
    }

    /// The Warning event's reason when the hook fails (kubelet's).
    pub(crate) fn failed_reason(self) -> &'static str {
        match self {
            Self::PostStart => "FailedPostStartHook",
            Self::PreStop => "FailedPreStopHook",
        }
    }

    /// The Warning event's message. Kubelet leaves the handler's output out of the event so
    /// that a secret the hook prints never reaches the API server; the full text is logged.
    pub(crate) fn failed_note(self) -> &'static str {
        match self {
            Self::PostStart => "PostStartHook failed",
            Self::PreStop => "PreStopHook failed",
        }
    }

    fn field(self) -> &'static str {
        match self {
            Self::PostStart => "lifecycle.postStart",
            Self::PreStop => "lifecycle.preStop",
        }
    }
}

/// What a hook does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HookAction {
    /// Run a command in the guest with `tart exec`.
    Exec {
        /// The argv.
        command: Vec<String>,
    },
    /// An HTTP GET from the Mac to the guest (or the hook's own host).
    HttpGet(HttpGet),
    /// Wait this long.
    Sleep(Duration),
    /// A hook that cannot run: kubelet fails it at run time with this error (a `tcpSocket`
    /// handler, which the API accepts only for backward compatibility; no handler; an `httpGet`
    /// port naming no `containerPort`).
    Invalid(String),
}

/// The container's hook of `kind`, if it has one.
pub(crate) fn hook(c: &Container, kind: HookKind) -> Option<HookAction> {
    let l = c.lifecycle.as_ref()?;
    let h = match kind {
        HookKind::PostStart => l.post_start.as_ref()?,
        HookKind::PreStop => l.pre_stop.as_ref()?,
    };
    Some(action(kind, h, c))
}

fn action(kind: HookKind, h: &LifecycleHandler, c: &Container) -> HookAction {
    if let Some(e) = &h.exec {
        return HookAction::Exec {
            command: e.command.clone().unwrap_or_default(),
        };
    }
    if let Some(g) = &h.http_get {
        return match http_get(kind.field(), g, c) {
            Ok(get) => HookAction::HttpGet(get),
            Err(e) => HookAction::Invalid(e.to_string()),
        };
    }
    if let Some(s) = &h.sleep {
        return HookAction::Sleep(Duration::from_secs(s.seconds.max(0).unsigned_abs()));
    }
    let what = if h.tcp_socket.is_some() {
        "tcpSocket is not supported as a lifecycle handler"
    } else {
        "no handler"
    };
    HookAction::Invalid(format!("invalid handler: {what}"))
}

/// Kubelet's log text for a failed hook (`handlerRunner.Run`): `pod` is `<name>_<ns>(<uid>)`,
/// `error` what went wrong, `output` an exec hook's output.
pub(crate) fn failure_message(
    action: &HookAction,
    container: &str,
    pod: &str,
    error: &str,
    output: &str,
) -> String {
    match action {
        HookAction::Exec { command } => format!(
            "Exec lifecycle hook ([{}]) for Container {container:?} in Pod {pod:?} failed - error: {error}, message: {output:?}",
            command.join(" ")
        ),
        HookAction::HttpGet(get) => format!(
            "HTTP lifecycle hook ({}) for Container {container:?} in Pod {pod:?} failed - error: {error}",
            get.path
        ),
        HookAction::Sleep(d) => format!(
            "Sleep lifecycle hook ({}) for Container {container:?} in Pod {pod:?} failed - error: {error}",
            d.as_secs()
        ),
        HookAction::Invalid(_) => format!("Cannot run handler: {error}"),
    }
}

#[cfg(test)]
mod tests;
