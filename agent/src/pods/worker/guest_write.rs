//! A guest's files, resolved before the clone and written on a blocking thread while
//! `tart clone` and `tart set` run.
//!
//! The write is handed to its thread only once a tart step is under way ([`alongside`]): the
//! hand-off wakes a blocking thread, and on a busy machine the woken thread can take the
//! worker's core for the whole write. Started while the worker waits on tart, that costs the
//! start nothing; started in the middle of the worker's own steps, it held them up by
//! milliseconds (docs/performance.md, "Agent overhead per Pod").

use std::future::Future;
use std::pin::pin;
use std::task::Poll;

use tart::DirShare;
use tokio::task::JoinHandle;

use crate::guest_contract::{model::ConfigError, prepare::GuestFiles};

/// A guest's files: resolved and waiting for a tart step to overlap, or being written. `tart
/// run` waits for them (the worker's `guest_written`), and only the part of the write that
/// outlasts the tart steps adds to the Pod's start.
pub(super) enum GuestWrite {
    /// Resolved; nothing written yet.
    Resolved(Box<GuestFiles>),
    /// Being written on a blocking thread.
    Writing(JoinHandle<Written>),
}

type Written = Result<Vec<DirShare>, ConfigError>;

impl GuestWrite {
    /// The write's handle: resolved files are handed to a blocking thread now.
    fn into_handle(self) -> JoinHandle<Written> {
        match self {
            Self::Resolved(files) => tokio::task::spawn_blocking(move || files.write()),
            Self::Writing(handle) => handle,
        }
    }

    /// The written shares, or why they could not be written; starts the write if no tart step
    /// did.
    pub(super) async fn finish(self) -> Written {
        match self.into_handle().await {
            Ok(res) => res,
            Err(e) => Err(ConfigError::Io(e.to_string())),
        }
    }

    /// Let a started write end, so it cannot recreate the guest's directory after it is
    /// removed; a write not started is dropped unwritten.
    pub(super) async fn settle(self) {
        if let Self::Writing(handle) = self {
            let _ = handle.await;
        }
    }
}

/// Start `write` if it has not started.
pub(super) fn start(write: &mut Option<GuestWrite>) {
    *write = write.take().map(|w| GuestWrite::Writing(w.into_handle()));
}

/// Run the tart step `step`, calling `start` once the step is under way: `step` is polled once
/// (spawning its `tart` process, or queueing for it) before `start` hands the write to its
/// thread. A step done at its first poll leaves the write to the next step, or to `tart run`.
pub(super) async fn alongside<F: Future>(step: F, start: impl FnOnce()) -> F::Output {
    let mut step = pin!(step);
    let first = std::future::poll_fn(|cx| Poll::Ready(step.as_mut().poll(cx))).await;
    if let Poll::Ready(out) = first {
        return out;
    }
    start();
    step.await
}
