//! `/containerLogs`: the query ([`query`]), the [`LogSource`] seam that reads a container's log,
//! and its errors in kubelet's words. Reading the log files is the log store's business; this
//! module only defines what the HTTP side needs from it.

#[cfg(test)]
pub(crate) mod memory;
pub(crate) mod pending;
pub(crate) mod query;

use std::{io, pin::Pin};

use bytes::Bytes;
use futures::{Stream, future::BoxFuture};

pub(crate) use query::LogQuery;

/// The container a log request names.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct LogTarget {
    pub namespace: String,
    pub pod: String,
    pub container: String,
}

/// Log bytes as they become available; the stream ends when the log does (or, with `follow`,
/// when the container terminates). Dropping it cancels the read.
pub(crate) type LogStream = Pin<Box<dyn Stream<Item = io::Result<Bytes>> + Send>>;

/// Reads container logs. Implemented by the log store; [`memory::MemoryLogs`] in tests.
pub(crate) trait LogSource: Send + Sync + 'static {
    /// Opens the log of `target` as `query` asks: tail, since, timestamps and the byte limit are
    /// applied by the source; the HTTP side only copies the stream to the response.
    fn open(
        &self,
        target: &LogTarget,
        query: &LogQuery,
    ) -> BoxFuture<'static, Result<LogStream, LogError>>;
}

/// Why a log cannot be served, with kubelet's texts.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LogError {
    /// No such Pod on this node (404).
    #[error("pod {pod:?} does not exist")]
    PodNotFound {
        /// Pod name.
        pod: String,
    },
    /// The Pod has no such container (404).
    #[error("container {container:?} not found in pod {pod:?}")]
    ContainerNotFound {
        /// Container name.
        container: String,
        /// Pod name.
        pod: String,
    },
    /// The log cannot be read in this state (400), e.g. `container "c" in pod "p" is waiting
    /// to start: ContainerCreating` or `previous terminated container "c" in pod "p" not found`.
    #[error("{0}")]
    Unavailable(String),
    /// Reading the log failed (500).
    #[error("reading the log failed")]
    Read(#[source] io::Error),
}

/// [`LogError`]'s closed kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LogErrorKind {
    /// 404, no such Pod.
    PodNotFound,
    /// 404, no such container.
    ContainerNotFound,
    /// 400.
    Unavailable,
    /// 500.
    Read,
}

impl LogErrorKind {
    /// The kind as a label value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::PodNotFound => "pod_not_found",
            Self::ContainerNotFound => "container_not_found",
            Self::Unavailable => "unavailable",
            Self::Read => "read",
        }
    }
}

impl LogError {
    /// The closed kind.
    pub(crate) fn kind(&self) -> LogErrorKind {
        match self {
            Self::PodNotFound { .. } => LogErrorKind::PodNotFound,
            Self::ContainerNotFound { .. } => LogErrorKind::ContainerNotFound,
            Self::Unavailable(_) => LogErrorKind::Unavailable,
            Self::Read(_) => LogErrorKind::Read,
        }
    }

    /// The HTTP status kubelet answers with; the API server turns 404 into `NotFound`, 400
    /// into `BadRequest` and 500 into `InternalError`, with the body as the message.
    pub(crate) fn status(&self) -> u16 {
        match self.kind() {
            LogErrorKind::PodNotFound | LogErrorKind::ContainerNotFound => 404,
            LogErrorKind::Unavailable => 400,
            LogErrorKind::Read => 500,
        }
    }
}

#[cfg(test)]
mod tests;
