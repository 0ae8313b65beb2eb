//! A guest's files written on a blocking thread while `tart clone` and `tart set` run.

use tart::DirShare;
use tokio::task::JoinHandle;

use crate::guest_contract::{model::ConfigError, prepare::GuestFiles};

/// A guest's files being written on a blocking thread. It starts once they are resolved, so
/// the write overlaps the clone; `tart run` waits for it (the worker's `guest_written`), and
/// only the part of it that outlasts the tart steps adds to the Pod's start.
pub(super) struct GuestWrite(JoinHandle<Result<Vec<DirShare>, ConfigError>>);

impl GuestWrite {
    pub(super) fn spawn(files: GuestFiles) -> Self {
        Self(tokio::task::spawn_blocking(move || files.write()))
    }

    /// The written shares, or why they could not be written.
    pub(super) async fn finish(self) -> Result<Vec<DirShare>, ConfigError> {
        match self.0.await {
            Ok(res) => res,
            Err(e) => Err(ConfigError::Io(e.to_string())),
        }
    }
}
