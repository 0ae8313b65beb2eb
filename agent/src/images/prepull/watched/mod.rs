//! The pre-pull declaration as the API server has it, from one watch on its ConfigMap
//! (`fieldSelector=metadata.name=<name>` in its namespace). A change wakes the pre-pull task at
//! once, and a Mac whose declaration does not change makes no request for it: the watch is one
//! long request, re-opened about every 5 minutes, where a read per period was one request a
//! minute. While the watch is down the last copy it listed stays in use. Errors are retried
//! with [`API_RETRY`] and logged once per streak.

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api, Client,
    runtime::{
        WatchStreamExt,
        reflector::{self, ObjectRef, Store},
        watcher,
    },
};
use tokio::{sync::watch, task::JoinHandle};
use tracing::{info, warn};

use super::declaration::{Declaration, DeclarationError};
use crate::backoff::{API_RETRY, WatchBackoff};

/// The watch; dropping it ends the watch.
pub(crate) struct Watched {
    store: Store<ConfigMap>,
    name: String,
    namespace: String,
    /// Marked changed by every event that may change the declaration; seen by [`Self::current`].
    changed: watch::Receiver<()>,
    task: Option<JoinHandle<()>>,
}

impl Drop for Watched {
    fn drop(&mut self) {
        if let Some(t) = &self.task {
            t.abort();
        }
    }
}

impl Watched {
    /// Start watching ConfigMap `namespace/name`.
    pub(crate) fn start(client: Client, namespace: &str, name: &str) -> Self {
        let (store, writer) = reflector::store();
        let (wake, changed) = watch::channel(());
        let api: Api<ConfigMap> = Api::namespaced(client, namespace);
        let cfg = watcher::Config::default().fields(&format!("metadata.name={name}"));
        let stream = reflector::reflector(
            writer,
            watcher(api, cfg).backoff(WatchBackoff::new(API_RETRY)),
        );
        let config = format!("{namespace}/{name}");
        let task = tokio::spawn(async move {
            futures::pin_mut!(stream);
            let mut failing = false;
            while let Some(ev) = stream.next().await {
                match ev {
                    Ok(ev) => {
                        if failing {
                            info!(%config, "pre-pull declaration watch is back");
                            failing = false;
                        }
                        if wakes(&ev) {
                            wake.send_replace(());
                        }
                    }
                    Err(error) => {
                        if !failing {
                            warn!(%config, %error, "pre-pull declaration watch failed; retrying, the last copy stays in use");
                            failing = true;
                        }
                    }
                }
            }
        });
        Self {
            store,
            name: name.to_owned(),
            namespace: namespace.to_owned(),
            changed,
            task: Some(task),
        }
    }

    /// Once the watch has listed the declaration for the first time.
    pub(crate) async fn listed(&self) {
        if self.store.wait_until_ready().await.is_err() {
            // The watch task ended (shutdown): nothing will ever be listed.
            std::future::pending::<()>().await;
        }
    }

    /// The declaration as last seen; an absent ConfigMap declares nothing. What it returns is
    /// seen: [`Self::changed`] waits for the next change.
    ///
    /// # Errors
    /// [`DeclarationError`] naming what is wrong with the ConfigMap.
    pub(crate) fn current(&mut self) -> Result<Declaration, DeclarationError> {
        self.changed.borrow_and_update();
        let key = ObjectRef::new(&self.name).within(&self.namespace);
        match self.store.get(&key) {
            None => Ok(Declaration::default()),
            Some(cm) => Declaration::parse(&cm.data.clone().unwrap_or_default()),
        }
    }

    /// Resolves when the declaration may have changed since the last [`Self::current`] (at
    /// once if it did meanwhile).
    pub(crate) async fn changed(&mut self) {
        if self.changed.changed().await.is_err() {
            // The watch task ended (shutdown): nothing will change any more.
            std::future::pending::<()>().await;
        }
    }
}

/// Whether a watch event can change what [`Watched::current`] returns: an object applied or
/// deleted, or a re-list finished (it may have found the object gone or changed).
fn wakes(ev: &watcher::Event<ConfigMap>) -> bool {
    matches!(
        ev,
        watcher::Event::Apply(_) | watcher::Event::Delete(_) | watcher::Event::InitDone
    )
}

#[cfg(test)]
mod tests;
