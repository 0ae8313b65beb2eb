//! Errors from Tart operations, and the classifier that turns an exit code plus stderr into a
//! closed [`ErrorKind`] (§1.3). The kind decides retry (here and in the agent) and metric labels.

use crate::Op;

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Closed classification of a failed Tart operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The VM (exit 2, `does not exist`) or the image (registry 404) does not exist.
    NotFound,
    /// `VM "<name>" is already running!` (exit 2).
    AlreadyRunning,
    /// `VM "<name>" is not running` (exit 2).
    NotRunning,
    /// Apple's two-VM limit (§3.4): host fault.
    VmLimit,
    /// `Failed to lock auxiliary storage.`: host fault, usually a lingering VM process.
    AuxStorageLocked,
    /// A lock is held by another process (`VM "x" is running` on delete, `failed to lock`).
    LockBusy,
    /// The operation passed its deadline and was killed.
    Timeout,
    /// A pull made no progress for the stall window and was killed.
    Stalled,
    /// Transient network failure (`The request timed out.`, other URL errors).
    Network,
    /// No space left on device.
    NoSpace,
    /// Registry authentication failed (401/403, `AuthFailed`, invalid credentials).
    Auth,
    /// Usage error (exit 64): a bug in argv building or an unsupported Tart version.
    Usage,
    /// The `tart` program could not be started (missing, not executable).
    Spawn,
    /// Anything else.
    Other,
}

impl ErrorKind {
    /// Every kind, for pre-registering metric label sets.
    pub const ALL: [ErrorKind; 14] = [
        ErrorKind::NotFound,
        ErrorKind::AlreadyRunning,
        ErrorKind::NotRunning,
        ErrorKind::VmLimit,
        ErrorKind::AuxStorageLocked,
        ErrorKind::LockBusy,
        ErrorKind::Timeout,
        ErrorKind::Stalled,
        ErrorKind::Network,
        ErrorKind::NoSpace,
        ErrorKind::Auth,
        ErrorKind::Usage,
        ErrorKind::Spawn,
        ErrorKind::Other,
    ];

    /// Stable snake_case name, usable as a metric label value.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::NotFound => "not_found",
            ErrorKind::AlreadyRunning => "already_running",
            ErrorKind::NotRunning => "not_running",
            ErrorKind::VmLimit => "vm_limit",
            ErrorKind::AuxStorageLocked => "aux_storage_locked",
            ErrorKind::LockBusy => "lock_busy",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Stalled => "stalled",
            ErrorKind::Network => "network",
            ErrorKind::NoSpace => "no_space",
            ErrorKind::Auth => "auth",
            ErrorKind::Usage => "usage",
            ErrorKind::Spawn => "spawn",
            ErrorKind::Other => "other",
        }
    }

    /// Killed-and-retried inside this crate: timeout, stall, transient network, lock-busy.
    pub fn is_retryable(self) -> bool {
        matches!(
            self,
            ErrorKind::Timeout | ErrorKind::Stalled | ErrorKind::Network | ErrorKind::LockBusy
        )
    }

    /// A problem of the host, not of the workload: the Pod stays Pending and is retried.
    pub fn is_host_fault(self) -> bool {
        matches!(
            self,
            ErrorKind::VmLimit | ErrorKind::AuxStorageLocked | ErrorKind::NoSpace | ErrorKind::Spawn
        )
    }
}

/// A failed Tart operation: which subcommand, how it ended, and the first stderr line.
#[derive(Debug, thiserror::Error)]
#[error("tart {op} failed ({}): {message}", kind.as_str())]
pub struct Error {
    /// The operation.
    pub op: Op,
    /// Classification.
    pub kind: ErrorKind,
    /// Exit code, when the process exited.
    pub exit_code: Option<i32>,
    /// First non-empty stderr line (or a description for timeouts/spawn errors), lossily decoded.
    pub message: String,
    /// Underlying I/O error, for spawn failures.
    #[source]
    pub source: Option<std::io::Error>,
}

impl Error {
    /// The kind.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
}
