//! The fence: raised once when another agent instance is seen holding this Node's Lease
//! (seen by the Lease task). From then on this agent must not act: the status loop stops writing,
//! the Lease task stops renewing, and the Pod side is given a shutdown signal
//! ([`pod_shutdown`]) that turns true with the fence, so it drops its workers and leaves the
//! VMs to the agent that holds the Lease.

use tokio::sync::watch;
use tracing::{Instrument, info_span};

/// Shared fence; clones see the same state.
#[derive(Clone, Debug)]
pub struct Fence {
    tx: watch::Sender<Option<String>>,
}

impl Default for Fence {
    fn default() -> Self {
        Self {
            tx: watch::channel(None).0,
        }
    }
}

impl Fence {
    /// Raise the fence: `holder` is the other instance that holds the Lease.
    pub fn raise(&self, holder: String) {
        self.tx.send_replace(Some(holder));
    }

    /// The holder that fenced us, if any.
    pub fn holder(&self) -> Option<String> {
        self.tx.borrow().clone()
    }

    /// Follow the fence.
    pub fn subscribe(&self) -> watch::Receiver<Option<String>> {
        self.tx.subscribe()
    }
}

/// A shutdown signal that turns true when `shutdown` does or when `fence` is raised.
pub fn pod_shutdown(mut shutdown: watch::Receiver<bool>, fence: &Fence) -> watch::Receiver<bool> {
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
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn the_pod_side_stops_when_fenced_or_on_shutdown() {
        let (sd_tx, sd_rx) = watch::channel(false);
        let fence = Fence::default();
        let mut pods = pod_shutdown(sd_rx.clone(), &fence);
        assert!(!*pods.borrow());
        fence.raise("n_other".into());
        tokio::time::timeout(Duration::from_secs(1), pods.wait_for(|s| *s))
            .await
            .expect("fenced in time")
            .unwrap();

        let mut pods = pod_shutdown(sd_rx, &Fence::default());
        sd_tx.send_replace(true);
        tokio::time::timeout(Duration::from_secs(1), pods.wait_for(|s| *s))
            .await
            .expect("shut down in time")
            .unwrap();
    }
}
