//! Which event to publish for what happened, with kubelet's reasons and messages
//! (docs/reference/host-and-conventions.md §5.3), plus our own `CreatingVM`, `WaitingForVMSlot` and
//! the host fault Warnings. Each [`Occurrence`] is published once: the caller supplies a sequence
//! number naming the occurrence (e.g. the attempt number), the sink drops repeats of the pair
//! ([`EventKind`], number), so a re-run reconcile never repeats an event. Pure; publishing lives in
//! `pods::sink`.

use std::time::Duration;

use kube::runtime::events::EventType;
use tart::ErrorKind;

use super::{admission::RejectReason, reasons::host_fault_reason};
use crate::guest_contract::prepare::GuestWarning;
use crate::lifecycle::{hooks::HookKind, probes::EventReason};

/// Something worth an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Occurrence {
    /// Provisioning starts.
    CreatingVm {
        /// VM name.
        vm: String,
    },
    /// `tart pull` starts.
    Pulling { image: String },
    /// `tart pull` succeeded.
    Pulled {
        image: String,
        /// How long it took.
        took: Duration,
    },
    /// The image was cached and the policy allows using it.
    AlreadyPresent { image: String },
    /// A pull failed for a workload reason (not found, auth).
    PullFailed {
        image: String,
        /// Error text (never contains credentials: tart gets them through env).
        error: String,
    },
    /// Waiting before the next pull attempt.
    PullBackOff { image: String },
    /// `imagePullPolicy: Never` and not cached.
    NeverPull { image: String },
    /// Clone and set done.
    Created {
        /// Container name.
        container: String,
    },
    /// `tart run` passed its start window.
    Started {
        /// Container name.
        container: String,
    },
    /// The VM is being stopped.
    Killing {
        /// Container name.
        container: String,
    },
    /// A provisioning step failed for another reason.
    Failed {
        /// What failed.
        message: String,
    },
    /// Waiting to restart a VM that exited.
    BackOffRestart {
        container: String,
        /// `<pod>_<ns>(<uid>)`.
        pod: String,
    },
    /// No VM slot free.
    WaitingForSlot {
        /// Slots in use.
        used: u32,
        /// Slots in all.
        total: u32,
    },
    /// A host problem blocks the start.
    HostFault {
        /// One of the host-fault kinds.
        kind: ErrorKind,
        /// Tart's message.
        message: String,
    },
    /// Rejected at admission.
    Rejected {
        /// Why.
        reason: RejectReason,
        message: String,
    },
    /// `envFrom` keys skipped because they are not valid variable names.
    InvalidEnvNames {
        /// `configmap` or `secret`, as kubelet words it.
        source_kind: &'static str,
        /// `<namespace>/<name>` of the source.
        source: String,
        /// The skipped keys.
        keys: Vec<String>,
    },
    /// Pod fields the agent accepts but does not honour.
    IgnoredFields {
        /// Field paths, e.g. `spec.containers[0].livenessProbe`.
        fields: Vec<String>,
    },
    /// Environment variables from `status.podIP`/`podIPs`, which are unknown before the VM boots.
    PodIpUnknown {
        /// The variables left empty.
        names: Vec<String>,
    },
    /// A volume's files (a Secret, a ConfigMap, a token) could not be brought up to date.
    VolumeUpdateFailed {
        volume: String,
        /// Why (never a value).
        error: String,
    },
    /// `activeDeadlineSeconds` passed.
    DeadlineExceeded,
    /// A probe attempt failed or errored (`Unhealthy`), or passed with a remark
    /// (`ProbeWarning`, e.g. a redirect to another host, not followed).
    Probe {
        /// `Unhealthy` or `ProbeWarning`.
        reason: EventReason,
        /// Kubelet's words, e.g. `Readiness probe failed: HTTP probe failed with statuscode: 500`.
        message: String,
    },
    /// The VM's job is stopped because its liveness or startup probe, or its `postStart`
    /// hook, failed.
    ProbeKilling {
        /// `Container <name> failed liveness probe[, will be restarted]`, or
        /// `FailedPostStartHook`.
        message: String,
    },
    /// A lifecycle hook failed.
    HookFailed {
        /// Which hook.
        hook: HookKind,
    },
    /// A deleted Pod's job is busy: the VM waits for it, at most `left`.
    WaitingForJob {
        /// What is left of the grace period.
        left: Duration,
    },
    /// A deleted Pod's job was still busy when the grace period ran out.
    GracePeriodExpired {
        /// The Pod's grace period.
        grace: Duration,
    },
    /// The job's VM ended abnormally; the vitals say why.
    VmDied {
        /// `OOMKilled`, the `DisruptionTarget` reason, or `JobFailed`.
        reason: &'static str,
        /// The classification's summary of the last samples.
        summary: String,
    },
    /// The job exited non-zero on its own (its VM did not die): `JobFailed`.
    JobFailed {
        /// The classification's summary of the last samples.
        summary: String,
    },
    /// The guest put something other than a regular file where the agent reads one (its
    /// status share): it was not read (docs/guest.md, "What the agent trusts").
    GuestFileRefused {
        /// `status/<name>`.
        file: String,
        /// What was found: `symlink`, `fifo`, `device`, `socket` or `directory`.
        found: &'static str,
    },
    /// The guest wrote more output at once than the Pod's log keeps: the agent skipped it.
    GuestOutputSkipped {
        /// `status/<name>`.
        file: String,
        /// Bytes skipped.
        bytes: u64,
    },
    /// The Pod's VM profile is not known (its RuntimeClass is missing, or its handler is not
    /// served here): kubelet's `FailedCreatePodSandBox`.
    SandboxFailed {
        /// [`crate::pods::profile::ProfileWait::message`].
        message: String,
    },
    /// No guest launcher reported: the start attempt ended (docs/guest.md).
    NoLauncher {
        /// `GuestLauncherMissing` or `GuestLauncherFailed`.
        reason: &'static str,
        /// What was tried and what to read.
        message: String,
    },
}

/// The kind of an occurrence: with a sequence number, what the sink dedupes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum EventKind {
    /// [`Occurrence::CreatingVm`].
    CreatingVm,
    /// [`Occurrence::Pulling`].
    Pulling,
    /// [`Occurrence::Pulled`] or [`Occurrence::AlreadyPresent`]: one per pull attempt.
    Pulled,
    /// [`Occurrence::PullFailed`].
    PullFailed,
    /// [`Occurrence::PullBackOff`].
    PullBackOff,
    /// [`Occurrence::NeverPull`].
    NeverPull,
    /// [`Occurrence::Created`].
    Created,
    /// [`Occurrence::Started`].
    Started,
    /// [`Occurrence::Killing`].
    Killing,
    /// [`Occurrence::Failed`].
    Failed,
    /// [`Occurrence::BackOffRestart`].
    BackOffRestart,
    /// [`Occurrence::WaitingForSlot`].
    WaitingForSlot,
    /// [`Occurrence::HostFault`].
    HostFault,
    /// [`Occurrence::Rejected`].
    Rejected,
    /// [`Occurrence::InvalidEnvNames`].
    InvalidEnvNames,
    /// [`Occurrence::IgnoredFields`].
    IgnoredFields,
    /// [`Occurrence::PodIpUnknown`].
    PodIpUnknown,
    /// [`Occurrence::VolumeUpdateFailed`].
    VolumeUpdateFailed,
    /// [`Occurrence::DeadlineExceeded`].
    DeadlineExceeded,
    /// [`Occurrence::Probe`].
    Probe,
    /// [`Occurrence::ProbeKilling`].
    ProbeKilling,
    /// [`Occurrence::HookFailed`] for a `postStart` hook.
    PostStartHookFailed,
    /// [`Occurrence::HookFailed`] for a `preStop` hook.
    PreStopHookFailed,
    /// [`Occurrence::WaitingForJob`].
    WaitingForJob,
    /// [`Occurrence::GracePeriodExpired`].
    GracePeriodExpired,
    /// [`Occurrence::VmDied`] or [`Occurrence::JobFailed`]: at most one per run's end, as
    /// the verdict makes it one or the other.
    RunEnded,
    /// [`Occurrence::GuestFileRefused`].
    GuestFileRefused,
    /// [`Occurrence::GuestOutputSkipped`].
    GuestOutputSkipped,
    /// [`Occurrence::NoLauncher`].
    NoLauncher,
    /// [`Occurrence::SandboxFailed`].
    SandboxFailed,
}

impl From<GuestWarning> for Occurrence {
    fn from(w: GuestWarning) -> Self {
        match w {
            GuestWarning::InvalidEnvNames {
                source_kind,
                source,
                keys,
            } => Self::InvalidEnvNames {
                source_kind,
                source,
                keys,
            },
            GuestWarning::PodIpUnknown { names } => Self::PodIpUnknown { names },
        }
    }
}

impl Occurrence {
    pub(crate) fn kind(&self) -> EventKind {
        match self {
            Self::CreatingVm { .. } => EventKind::CreatingVm,
            Self::Pulling { .. } => EventKind::Pulling,
            Self::Pulled { .. } | Self::AlreadyPresent { .. } => EventKind::Pulled,
            Self::PullFailed { .. } => EventKind::PullFailed,
            Self::PullBackOff { .. } => EventKind::PullBackOff,
            Self::NeverPull { .. } => EventKind::NeverPull,
            Self::Created { .. } => EventKind::Created,
            Self::Started { .. } => EventKind::Started,
            Self::Killing { .. } => EventKind::Killing,
            Self::Failed { .. } => EventKind::Failed,
            Self::BackOffRestart { .. } => EventKind::BackOffRestart,
            Self::WaitingForSlot { .. } => EventKind::WaitingForSlot,
            Self::HostFault { .. } => EventKind::HostFault,
            Self::Rejected { .. } => EventKind::Rejected,
            Self::InvalidEnvNames { .. } => EventKind::InvalidEnvNames,
            Self::IgnoredFields { .. } => EventKind::IgnoredFields,
            Self::PodIpUnknown { .. } => EventKind::PodIpUnknown,
            Self::VolumeUpdateFailed { .. } => EventKind::VolumeUpdateFailed,
            Self::DeadlineExceeded => EventKind::DeadlineExceeded,
            Self::Probe { .. } => EventKind::Probe,
            Self::ProbeKilling { .. } => EventKind::ProbeKilling,
            Self::HookFailed {
                hook: HookKind::PostStart,
            } => EventKind::PostStartHookFailed,
            Self::HookFailed {
                hook: HookKind::PreStop,
            } => EventKind::PreStopHookFailed,
            Self::WaitingForJob { .. } => EventKind::WaitingForJob,
            Self::GracePeriodExpired { .. } => EventKind::GracePeriodExpired,
            Self::VmDied { .. } | Self::JobFailed { .. } => EventKind::RunEnded,
            Self::GuestFileRefused { .. } => EventKind::GuestFileRefused,
            Self::GuestOutputSkipped { .. } => EventKind::GuestOutputSkipped,
            Self::NoLauncher { .. } => EventKind::NoLauncher,
            Self::SandboxFailed { .. } => EventKind::SandboxFailed,
        }
    }
}

/// Kubelet's words for a Pod past its `activeDeadlineSeconds` (event and `status.message`).
pub(crate) const DEADLINE_MESSAGE: &str =
    "Pod was active on the node longer than the specified deadline";

/// A ready-to-publish event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EventSpec {
    /// Normal or Warning.
    pub type_: EventType,
    /// PascalCase reason.
    pub reason: String,
    /// Human message (≤ 1 kB).
    pub note: String,
    /// events.k8s.io `action`.
    pub action: &'static str,
}

fn host_fault_text(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::VmLimit => "the host reached its limit of running macOS VMs",
        ErrorKind::AuxStorageLocked => {
            "the VM's auxiliary storage is locked, usually by a lingering VM process"
        }
        ErrorKind::NoSpace => "no space left on the TART_HOME volume",
        ErrorKind::Spawn => "the tart program could not be started",
        _ => "host problem",
    }
}

/// Cut to at most `max` bytes on a char boundary.
fn cap(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut i = max;
        while !s.is_char_boundary(i) {
            i -= 1;
        }
        s.truncate(i);
    }
    s
}

/// `message` without the `Error: ` that Tart puts in front of its own messages, so that
/// kubelet's `Error: <message>` never reads `Error: Error: …`.
pub(crate) fn without_error_prefix(message: &str) -> &str {
    let mut m = message.trim_start();
    while let Some(rest) = m.strip_prefix("Error:") {
        m = rest.trim_start();
    }
    m
}

/// The event for an occurrence.
pub(crate) fn spec(o: &Occurrence) -> EventSpec {
    use EventType::{Normal, Warning};
    let (type_, reason, note, action): (EventType, &str, String, &'static str) = match o {
        Occurrence::CreatingVm { vm } => (
            Normal,
            "CreatingVM",
            format!("Creating Tart VM {vm}"),
            "Create",
        ),
        Occurrence::Pulling { image } => (
            Normal,
            "Pulling",
            format!("Pulling image \"{image}\""),
            "Pull",
        ),
        Occurrence::Pulled { image, took } => (
            Normal,
            "Pulled",
            format!(
                "Successfully pulled image \"{image}\" in {:.3}s",
                took.as_secs_f64()
            ),
            "Pull",
        ),
        Occurrence::AlreadyPresent { image } => (
            Normal,
            "Pulled",
            format!("Container image \"{image}\" already present on machine"),
            "Pull",
        ),
        Occurrence::PullFailed { image, error } => (
            Warning,
            "Failed",
            format!("Failed to pull image \"{image}\": {error}"),
            "Pull",
        ),
        Occurrence::PullBackOff { image } => (
            Normal,
            "BackOff",
            format!("Back-off pulling image \"{image}\""),
            "Pull",
        ),
        Occurrence::NeverPull { image } => (
            Warning,
            "ErrImageNeverPull",
            format!("Container image \"{image}\" is not present with pull policy of Never"),
            "Pull",
        ),
        Occurrence::Created { container } => (
            Normal,
            "Created",
            format!("Created container {container}"),
            "Create",
        ),
        Occurrence::Started { container } => (
            Normal,
            "Started",
            format!("Started container {container}"),
            "Start",
        ),
        Occurrence::Killing { container } => (
            Normal,
            "Killing",
            format!("Stopping container {container}"),
            "Kill",
        ),
        Occurrence::Failed { message } => (
            Warning,
            "Failed",
            format!("Error: {}", without_error_prefix(message)),
            "Create",
        ),
        Occurrence::BackOffRestart { container, pod } => (
            Warning,
            "BackOff",
            format!("Back-off restarting failed container {container} in pod {pod}"),
            "Start",
        ),
        Occurrence::WaitingForSlot { used, total } => (
            Normal,
            "WaitingForVMSlot",
            format!(
                "All {total} VM slots of this node are in use ({used} used); the Pod starts when one is free"
            ),
            "Schedule",
        ),
        Occurrence::HostFault { kind, message } => (
            Warning,
            host_fault_reason(*kind),
            format!(
                "Host problem, will retry: {}: {message}",
                host_fault_text(*kind)
            ),
            "Start",
        ),
        Occurrence::Rejected { reason, message } => {
            (Warning, reason.pod_reason(), message.clone(), "Admit")
        }
        Occurrence::InvalidEnvNames {
            source_kind,
            source,
            keys,
        } => (
            Warning,
            "InvalidEnvironmentVariableNames",
            format!(
                "Keys [{}] from the EnvFrom {source_kind} {source} were skipped since they are considered invalid environment variable names.",
                keys.join(", ")
            ),
            "Create",
        ),
        Occurrence::IgnoredFields { fields } => (
            Warning,
            "UnsupportedFields",
            format!(
                "Tart VM nodes do not honour these fields, which are ignored: {}",
                fields.join(", ")
            ),
            "Admit",
        ),
        Occurrence::PodIpUnknown { names } => (
            Warning,
            "PodIPNotYetKnown",
            format!(
                "The VM's IP is not known before it boots, so these variables from status.podIP are empty: {}",
                names.join(", ")
            ),
            "Create",
        ),
        Occurrence::VolumeUpdateFailed { volume, error } => (
            Warning,
            "FailedMount",
            format!("MountVolume.SetUp failed for volume \"{volume}\" : {error}"),
            "Mount",
        ),
        Occurrence::DeadlineExceeded => (
            Normal,
            "DeadlineExceeded",
            DEADLINE_MESSAGE.to_owned(),
            "Kill",
        ),
        Occurrence::Probe { reason, message } => {
            (Warning, reason.as_str(), message.clone(), "Probe")
        }
        Occurrence::ProbeKilling { message } => (Normal, "Killing", message.clone(), "Kill"),
        Occurrence::HookFailed { hook } => (
            Warning,
            hook.failed_reason(),
            hook.failed_note().to_owned(),
            "Hook",
        ),
        Occurrence::WaitingForJob { left } => (
            Normal,
            "WaitingForJob",
            format!(
                "The job is busy: waiting up to {}s for it to finish before stopping the VM",
                left.as_secs()
            ),
            "Kill",
        ),
        Occurrence::GracePeriodExpired { grace } => (
            Warning,
            "GracePeriodExpired",
            format!(
                "The job was still busy when the grace period of {}s ran out: stopping the VM",
                grace.as_secs()
            ),
            "Kill",
        ),
        Occurrence::VmDied { reason, summary } => {
            (Warning, *reason, format!("The VM died: {summary}"), "Kill")
        }
        Occurrence::JobFailed { summary } => (
            Warning,
            "JobFailed",
            format!("The job failed: {summary}"),
            "Exit",
        ),
        Occurrence::GuestFileRefused { file, found } => (
            Warning,
            "GuestFileRefused",
            format!("The guest put a {found} in place of {file}: it was not read"),
            "Read",
        ),
        Occurrence::GuestOutputSkipped { file, bytes } => (
            Warning,
            "GuestOutputSkipped",
            format!(
                "The guest wrote more to {file} at once than the container log keeps: {bytes} bytes were skipped"
            ),
            "Read",
        ),
        Occurrence::NoLauncher { reason, message } => {
            (Warning, *reason, format!("Error: {message}"), "Start")
        }
        Occurrence::SandboxFailed { message } => (
            Warning,
            "FailedCreatePodSandBox",
            format!("Failed to create pod sandbox: {message}"),
            "Create",
        ),
    };
    EventSpec {
        type_,
        reason: reason.to_owned(),
        note: cap(note, 1000),
        action,
    }
}

#[cfg(test)]
mod tests;
