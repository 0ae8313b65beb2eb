//! One watch on our own Node (`fieldSelector=metadata.name=<node>`), published as
//! [`ObservedNode`] on a `tokio::sync::watch` channel.
//!
//! The status loop uses it to notice at once when the Node is deleted (and register it again);
//! the Pod side can read allocatable and "Node gone" from it instead of polling the API. A
//! watch is one long-running request (re-established about every 5 minutes), so this costs far
//! less than any poll. [`WatchLive`] says whether the watch is currently connected, so that
//! while it is not (e.g. right after an API server outage, before it re-listed) the status loop
//! reads the Node itself instead of trusting a stale copy.

use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Node;
use kube::{
    Api, Client,
    runtime::{WatchStreamExt, watcher},
};
use tokio::sync::watch;
use tracing::debug;

use crate::backoff::{API_RETRY, WatchBackoff};

/// What the Node watch last saw.
#[derive(Clone, Debug, Default)]
pub(crate) enum ObservedNode {
    /// The watch has not listed yet.
    #[default]
    Unknown,
    /// The Node as last seen.
    Present(Arc<Node>),
    /// The Node does not exist (never created, or deleted).
    Absent,
}

impl ObservedNode {
    /// The Node, when present.
    pub(crate) fn node(&self) -> Option<&Node> {
        match self {
            ObservedNode::Present(n) => Some(n),
            _ => None,
        }
    }

    /// The Node's UID, when present.
    pub(crate) fn uid(&self) -> Option<&str> {
        self.node()?.metadata.uid.as_deref()
    }
}

/// Whether the Node watch is connected (it listed and has not failed since). Clones share
/// state.
#[derive(Clone, Debug, Default)]
pub(crate) struct WatchLive(Arc<AtomicBool>);

impl WatchLive {
    /// The watch is connected.
    pub(crate) fn get(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    fn set(&self, live: bool) {
        self.0.store(live, Ordering::Relaxed);
    }
}

/// Apply one watcher event to the observed state. `listing` buffers the re-list in progress
/// (`Some(found)` between `Init` and `InitDone`). Returns the new state if it changed.
pub(crate) fn apply_event(
    event: watcher::Event<Node>,
    listing: &mut Option<Option<Arc<Node>>>,
) -> Option<ObservedNode> {
    match event {
        watcher::Event::Apply(n) => Some(ObservedNode::Present(Arc::new(n))),
        watcher::Event::Delete(_) => Some(ObservedNode::Absent),
        watcher::Event::Init => {
            *listing = Some(None);
            None
        }
        watcher::Event::InitApply(n) => {
            *listing = Some(Some(Arc::new(n)));
            None
        }
        watcher::Event::InitDone => match listing.take() {
            Some(Some(n)) => Some(ObservedNode::Present(n)),
            Some(None) | None => Some(ObservedNode::Absent),
        },
    }
}

/// Watch `node_name` until `shutdown`. Errors are retried with [`API_RETRY`] (0.5 s doubling
/// to 7 s, reset once a watch succeeds), so after an API server outage the watch re-lists
/// within seconds of its return and the status loop sees what changed meanwhile.
pub(crate) async fn run(
    client: Client,
    node_name: String,
    tx: watch::Sender<ObservedNode>,
    live: WatchLive,
    mut shutdown: watch::Receiver<bool>,
) {
    let api: Api<Node> = Api::all(client);
    let cfg = watcher::Config::default().fields(&format!("metadata.name={node_name}"));
    let stream = watcher(api, cfg).backoff(WatchBackoff::new(API_RETRY));
    futures::pin_mut!(stream);
    let mut listing = None;
    loop {
        tokio::select! {
            ev = stream.next() => match ev {
                Some(Ok(ev)) => {
                    if let Some(state) = apply_event(ev, &mut listing) {
                        // Only a finished list or a live event proves the watch current.
                        live.set(true);
                        tx.send_replace(state);
                    }
                }
                Some(Err(error)) => {
                    live.set(false);
                    debug!(%error, "node watch error; retrying");
                }
                None => return,
            },
            _ = shutdown.changed() => return,
        }
    }
}

#[cfg(test)]
mod tests;
