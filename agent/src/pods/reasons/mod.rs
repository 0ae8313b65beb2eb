//! The closed sets of words a container state carries: why it waits and why it terminated —
//! kubelet's words, plus the agent's own for a busy node and host faults.

use tart::ErrorKind;

/// Why the one container is waiting (`state.waiting.reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum WaitingReason {
    /// Pull, clone or set in progress.
    ContainerCreating,
    /// The last pull failed.
    ErrImagePull,
    /// Waiting before the next pull attempt.
    ImagePullBackOff,
    /// `imagePullPolicy: Never` and the image is not cached.
    ErrImageNeverPull,
    /// Waiting before the VM is started again after an exit.
    CrashLoopBackOff,
    /// Creating the VM failed (clone, or `tart run`).
    CreateContainerError,
    /// The VM cannot be configured as the Pod asks (`tart set` refused it).
    CreateContainerConfigError,
    /// Every VM slot of the node is in use.
    WaitingForVmSlot,
    /// A host problem blocks the start; the kind names it.
    HostFault(ErrorKind),
    /// The Pod has a command but no launcher reported in its guest within the deadline: the
    /// image has neither the launcher nor the Tart Guest Agent (docs/guest.md).
    GuestLauncherMissing,
    /// The Tart Guest Agent answered but installing the launcher failed.
    GuestLauncherFailed,
}

impl WaitingReason {
    /// The reason as Kubernetes shows it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::ContainerCreating => "ContainerCreating",
            Self::ErrImagePull => "ErrImagePull",
            Self::ImagePullBackOff => "ImagePullBackOff",
            Self::ErrImageNeverPull => "ErrImageNeverPull",
            Self::CrashLoopBackOff => "CrashLoopBackOff",
            Self::CreateContainerError => "CreateContainerError",
            Self::CreateContainerConfigError => "CreateContainerConfigError",
            Self::WaitingForVmSlot => "WaitingForVMSlot",
            Self::HostFault(kind) => host_fault_reason(kind),
            Self::GuestLauncherMissing => "GuestLauncherMissing",
            Self::GuestLauncherFailed => "GuestLauncherFailed",
        }
    }
}

/// The reason a host fault is reported under, in the container state and its Warning event.
pub(crate) fn host_fault_reason(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::VmLimit => "VMLimitReached",
        ErrorKind::AuxStorageLocked => "AuxiliaryStorageLocked",
        ErrorKind::NoSpace => "HostDiskFull",
        ErrorKind::Spawn => "TartUnavailable",
        _ => "HostFault",
    }
}

/// Why a run of the VM ended (`state.terminated.reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum TerminatedReason {
    /// Exit code 0.
    Completed,
    /// Any other exit code.
    Error,
    /// The job ran its guest out of memory (the vitals said so).
    OomKilled,
    /// The VM stopped while no agent watched it: the exit code is unknown.
    ContainerStatusUnknown,
}

impl TerminatedReason {
    /// `Completed` for exit 0, `Error` otherwise (containerd's reasons).
    pub(crate) fn for_exit(code: i32) -> Self {
        if code == 0 {
            Self::Completed
        } else {
            Self::Error
        }
    }

    /// The reason as Kubernetes shows it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "Completed",
            Self::Error => "Error",
            Self::OomKilled => "OOMKilled",
            Self::ContainerStatusUnknown => "ContainerStatusUnknown",
        }
    }
}

#[cfg(test)]
mod tests;
