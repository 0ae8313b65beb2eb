//! The fence: raised once when another agent instance is seen holding this Node's Lease
//! (seen by the Lease task). From then on this agent must not act: the status loop stops writing,
//! the Lease task stops renewing, and the Pod side is given a shutdown signal
//! ([`pod_shutdown`]) that turns true with the fence, so it drops its workers and leaves the
//! VMs to the agent that holds the Lease.
//!
//! The fence also knows until when the Lease is ours: the last successful write plus the
//! Lease's duration, counted from when that write was sent. The Pod side publishes nothing —
//! no event, no status, no finalizer or delete — unless [`Fence::holds`] at that moment
//! ([`may_publish`]): an agent cut off from the API server past its Lease may have a
//! successor already, even before it learns so.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use tokio::{sync::watch, time::Instant};
use tracing::{Instrument, info_span};

/// Shared fence; clones see the same state. A default fence holds nothing until
/// [`Fence::renewed`].
#[derive(Clone, Debug)]
pub(crate) struct Fence {
    tx: watch::Sender<Option<String>>,
    held_until: Arc<Mutex<Option<Instant>>>,
}

impl Default for Fence {
    fn default() -> Self {
        Self {
            tx: watch::channel(None).0,
            held_until: Arc::default(),
        }
    }
}

/// Whether this agent may publish anything at `now`: not fenced, and its Lease (written last
/// by this agent, good until `held_until`) not expired.
pub(crate) fn may_publish(fenced: bool, held_until: Option<Instant>, now: Instant) -> bool {
    !fenced && held_until.is_some_and(|until| now < until)
}

impl Fence {
    /// A fence whose Lease was just written, good for `duration`.
    #[cfg(test)]
    pub(crate) fn held(duration: Duration) -> Self {
        let f = Self::default();
        f.renewed(Instant::now(), duration);
        f
    }

    /// The Lease was written by this agent with a request sent at `sent`: it is ours until
    /// `sent + duration`.
    pub(crate) fn renewed(&self, sent: Instant, duration: Duration) {
        let mut until = self
            .held_until
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *until = Some(sent + duration);
    }

    /// Whether the Lease is ours now ([`may_publish`]).
    pub(crate) fn holds(&self) -> bool {
        let until = *self
            .held_until
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        may_publish(self.holder().is_some(), until, Instant::now())
    }

    /// Raise the fence: `holder` is the other instance that holds the Lease.
    pub(crate) fn raise(&self, holder: String) {
        self.tx.send_replace(Some(holder));
    }

    /// The holder that fenced us, if any.
    pub(crate) fn holder(&self) -> Option<String> {
        self.tx.borrow().clone()
    }

    /// Follow the fence.
    pub(crate) fn subscribe(&self) -> watch::Receiver<Option<String>> {
        self.tx.subscribe()
    }
}

/// A shutdown signal that turns true when `shutdown` does or when `fence` is raised.
pub(crate) fn pod_shutdown(
    mut shutdown: watch::Receiver<bool>,
    fence: &Fence,
) -> watch::Receiver<bool> {
    let (tx, rx) = watch::channel(*shutdown.borrow() || fence.holder().is_some());
    let mut fenced = fence.subscribe();
    tokio::spawn(
        async move {
            tokio::select! {
                _ = shutdown.wait_for(|s| *s) => {}
                _ = fenced.wait_for(Option::is_some) => {}
                _ = tx.closed() => return,
            }
            tx.send_replace(true);
        }
        .instrument(info_span!("fence")),
    );
    rx
}

#[cfg(test)]
mod tests;
