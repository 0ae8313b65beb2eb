//! Errors from Tart operations, and the classifier that turns an exit code plus stderr into a
//! closed [`ErrorKind`] (docs/reference/tart-cli.md §1.3). The kind decides retry (here and in the
//! agent) and metric labels.

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
    /// Apple's two-VM limit (docs/reference/tart-cli.md §3.4): host fault.
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
            ErrorKind::VmLimit
                | ErrorKind::AuxStorageLocked
                | ErrorKind::NoSpace
                | ErrorKind::Spawn
        )
    }
}

/// A failed Tart operation: which subcommand, how it ended, and the first stderr line.
#[derive(Debug, thiserror::Error)]
#[error("tart {op} failed ({}): {message}", kind.as_str())]
pub struct Error {
    /// The subcommand that failed.
    pub op: Op,
    /// The closed classification that decides retry, requeue and metric labels.
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
    /// The `kind` field, for callers that hold the error behind a reference or a trait.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// An error with no I/O source.
    pub fn new(
        op: Op,
        kind: ErrorKind,
        exit_code: Option<i32>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            op,
            kind,
            exit_code,
            message: truncate(message.into()),
            source: None,
        }
    }

    /// A process that exited unsuccessfully: the kind comes from `classify`, the message is
    /// the stderr line that decided it (or the first non-empty line).
    pub fn from_exit(op: Op, exit_code: Option<i32>, stderr: &str) -> Self {
        let kind = classify(op, exit_code, stderr);
        let message = summary(op, kind, stderr).unwrap_or_else(|| match exit_code {
            Some(c) => format!("exit code {c}, no stderr"),
            None => "killed by a signal, no stderr".to_owned(),
        });
        Self::new(op, kind, exit_code, message)
    }

    /// The program could not be started.
    pub fn spawn(op: Op, program: &std::path::Path, source: std::io::Error) -> Self {
        Self {
            op,
            kind: ErrorKind::Spawn,
            exit_code: None,
            message: format!("cannot start {}", program.display()),
            source: Some(source),
        }
    }
}

/// Longest message kept: one stderr line can be a whole binary blob.
const MAX_MESSAGE: usize = 1024;

fn truncate(mut s: String) -> String {
    if s.len() > MAX_MESSAGE {
        let mut cut = MAX_MESSAGE;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push('…');
    }
    s
}

/// The line worth reporting: the first one that classifies as `kind` on its own, else the first
/// non-empty line.
fn summary(op: Op, kind: ErrorKind, stderr: &str) -> Option<String> {
    let mut lines = stderr.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.clone().next()?;
    let pick = if kind == ErrorKind::Other || kind == ErrorKind::Usage {
        first
    } else {
        lines
            .find(|l| classify_text(op, l) == Some(kind))
            .unwrap_or(first)
    };
    Some(pick.to_owned())
}

/// Classify a failed operation from its exit code **and** stderr
/// (docs/reference/tart-cli.md §1.3, §2, §3.4, §6).
///
/// Text decides first, because exit codes are overloaded: `tart run <missing>` exits 1
/// (validate path) while other commands exit 2 for the same error, and `tart exec` exits with
/// the guest command's code, so for [`Op::Exec`] the exit code is ignored entirely and only
/// Tart's own message forms are recognised. Exit 64 (EX_USAGE) is a usage error. Timeouts,
/// stalls and spawn failures are not visible here: the process layer assigns those kinds.
pub(crate) fn classify(op: Op, exit_code: Option<i32>, stderr: &str) -> ErrorKind {
    if let Some(kind) = classify_text(op, stderr) {
        return kind;
    }
    match (op, exit_code) {
        (Op::Exec, _) => ErrorKind::Other,
        (_, Some(64)) => ErrorKind::Usage,
        _ => ErrorKind::Other,
    }
}

/// For `tart exec`: `Some(kind)` when stderr carries one of Tart's own failure messages (VM
/// missing or not running, guest agent unreachable), `None` when the non-zero exit is simply
/// the guest command's (docs/reference/tart-cli.md §2.10).
pub(crate) fn classify_exec(stderr: &str) -> Option<ErrorKind> {
    classify_text(Op::Exec, stderr)
}

/// Text rules, most specific first. `None` when no rule matches.
fn classify_text(op: Op, text: &str) -> Option<ErrorKind> {
    let lower = text.to_lowercase();
    let has = |needle: &str| lower.contains(needle);
    // docs/reference/tart-cli.md §3.4: since 2.18.1 Tart's own text; before it the raw
    // Virtualization.framework text.
    if has("exceeds the system limit") || has("maximum supported number of active virtual machines")
    {
        return Some(ErrorKind::VmLimit);
    }
    // docs/reference/tart-cli.md §2.6: NVRAM held by another (possibly lingering) VM process.
    if has("failed to lock auxiliary storage") {
        return Some(ErrorKind::AuxStorageLocked);
    }
    if has("\" is already running!") {
        return Some(ErrorKind::AlreadyRunning);
    }
    // `VM "x" is not running`, and suspend's double-wrapped variant
    // (docs/reference/tart-cli.md §2.8).
    if has("\" is not running") {
        return Some(ErrorKind::NotRunning);
    }
    if has("the specified vm \"") && has("does not exist") {
        return Some(ErrorKind::NotFound);
    }
    // A guest command's stderr is free text: for exec, only Tart's exact forms above count,
    // plus the agent-unreachable message (docs/reference/tart-cli.md §2.10).
    if op == Op::Exec {
        if has("failed to connect to the vm using its control socket")
            || has("is only available on macos")
        {
            return Some(ErrorKind::Other);
        }
        return None;
    }
    // docs/reference/tart-cli.md §2.9: delete of a running VM; §1.3 PIDLockFailed `failed to lock
    // <url>: <errno>`.
    if lower
        .lines()
        .any(|l| l.trim_end().ends_with("\" is running"))
        || has("failed to lock ")
    {
        return Some(ErrorKind::LockBusy);
    }
    if has("no space left on device") || has("enospc") {
        return Some(ErrorKind::NoSpace);
    }
    if has("authfailed")
        || has("invalid credentials")
        || has("code: 401")
        || has("code: 403")
        || has("http 401")
        || has("http 403")
        || has("status code 401")
        || has("status code 403")
    {
        return Some(ErrorKind::Auth);
    }
    // docs/reference/tart-cli.md §2.1: a missing image is the registry's 404. A bare "does not
    // exist" is not enough: `TART_HOME is invalid: <path> does not exist, yet we can't create it`
    // (docs/reference/tart-cli.md §1.1) is a broken host, and calling it NotFound would make every
    // `delete` look like success.
    if has("code: 404") {
        return Some(ErrorKind::NotFound);
    }
    const NETWORK: [&str; 10] = [
        "the request timed out",
        "network connection was lost",
        "could not connect",
        "offline",
        "a server with the specified hostname could not be found",
        "cannot find host",
        "cannot connect to host",
        "dns lookup",
        "connection reset",
        "secure connection failed",
    ];
    if NETWORK.iter().any(|n| has(n)) {
        return Some(ErrorKind::Network);
    }
    None
}

#[cfg(test)]
mod tests;
