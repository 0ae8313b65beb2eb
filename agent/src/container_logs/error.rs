//! Why a container's log cannot be read or removed. Messages use kubelet's wording where
//! kubelet has one, since `kubectl logs` shows them to the user as they are.

use std::io;
use std::path::PathBuf;

/// A failed log request.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LogError {
    /// `previous` was asked and the container has no earlier run on disk.
    #[error("previous terminated container {container:?} in pod {pod:?} not found")]
    PreviousNotFound { container: String, pod: String },
    /// The container has no log yet: its first run has not started.
    #[error("container {container:?} in pod {pod:?} is waiting to start: ContainerCreating")]
    NotStarted { container: String, pod: String },
    /// A namespace, Pod, UID or container name that cannot be a path component.
    #[error("invalid name {0:?} in a log path")]
    InvalidName(String),
    /// Reading or removing log files failed.
    #[error("failed to access log file {path:?}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// The closed kind of a [`LogError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum LogErrorKind {
    PreviousNotFound,
    NotStarted,
    InvalidName,
    Io,
}

impl LogErrorKind {
    /// Metric label value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::PreviousNotFound => "previous_not_found",
            Self::NotStarted => "not_started",
            Self::InvalidName => "invalid_name",
            Self::Io => "io",
        }
    }
}

impl LogError {
    /// This error's kind.
    pub(crate) fn kind(&self) -> LogErrorKind {
        match self {
            Self::PreviousNotFound { .. } => LogErrorKind::PreviousNotFound,
            Self::NotStarted { .. } => LogErrorKind::NotStarted,
            Self::InvalidName(_) => LogErrorKind::InvalidName,
            Self::Io { .. } => LogErrorKind::Io,
        }
    }

    pub(super) fn io(path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }
}
