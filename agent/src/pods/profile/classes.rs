//! The RuntimeClass watch cache: one watch on `node.k8s.io/v1` RuntimeClasses (a long-running
//! request, re-established about every 5 minutes), so looking up a Pod's class costs no API
//! request. Every change wakes all Pods: one waiting for its class starts once it appears. Both
//! identities may read RuntimeClasses (`system:node` and the agent's ClusterRole grant get,
//! list and watch; docs/node.md).

use futures::{StreamExt, channel::mpsc::UnboundedSender};
use k8s_openapi::api::node::v1::RuntimeClass;
use kube::{
    Api, Client,
    runtime::{
        WatchStreamExt,
        reflector::{self, ObjectRef, Store, store::Writer},
        watcher,
    },
};
use tokio::sync::watch;
use tracing::debug;

use super::ClassLookup;
use crate::backoff::{API_RETRY, WatchBackoff};

/// Read side of the cache. Clones share it.
#[derive(Clone)]
pub(crate) struct RuntimeClasses(Store<RuntimeClass>);

impl RuntimeClasses {
    /// A cache fed by `writer` (tests feed it directly).
    pub(crate) fn new(writer: &Writer<RuntimeClass>) -> Self {
        Self(writer.as_reader())
    }

    /// Wait until the first list arrived, at most `max` (after it, a missing class is
    /// missing, not merely unlisted).
    pub(crate) async fn wait_ready(&self, max: std::time::Duration) {
        let _ = tokio::time::timeout(max, self.0.wait_until_ready()).await;
    }

    /// What the cache knows of the RuntimeClass `name`. Before the first list it knows none,
    /// as kubelet's informer does; the list's arrival wakes every Pod.
    pub(crate) fn lookup(&self, name: &str) -> ClassLookup {
        match self.0.get(&ObjectRef::new(name)) {
            Some(rc) => ClassLookup::Handler(rc.handler.clone()),
            None => ClassLookup::NotFound,
        }
    }
}

/// Keep `writer`'s cache current until shutdown; wake every Pod (`wake_all`) on each change.
pub(crate) async fn run(
    client: Client,
    writer: Writer<RuntimeClass>,
    wake_all: UnboundedSender<()>,
    mut shutdown: watch::Receiver<bool>,
) {
    let api: Api<RuntimeClass> = Api::all(client);
    let stream = reflector::reflector(writer, watcher(api, watcher::Config::default()))
        .backoff(WatchBackoff::new(API_RETRY));
    futures::pin_mut!(stream);
    loop {
        tokio::select! {
            ev = stream.next() => match ev {
                Some(Ok(watcher::Event::Apply(_) | watcher::Event::Delete(_) | watcher::Event::InitDone)) => {
                    let _ = wake_all.unbounded_send(());
                }
                Some(Ok(_)) => {}
                Some(Err(error)) => debug!(%error, "runtimeclass watch error; retrying"),
                None => return,
            },
            _ = shutdown.wait_for(|s| *s) => return,
        }
    }
}
