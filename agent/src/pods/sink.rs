//! Publishing events: one queue, one publisher task, per-Pod dedupe.
//!
//! Callers hand over an [`Occurrence`] with a dedupe key naming that occurrence (for example
//! `pulling#2` for the second pull attempt); a key already seen for that Pod is dropped, so a
//! re-run reconcile never repeats an event. A single task publishes in order through kube's
//! `Recorder` (events.k8s.io/v1) with a deadline per request, so a slow API server never
//! blocks a Pod worker and CreatingVM, Pulling, Pulled, Created, Started keep their order.

use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, Mutex},
    time::Duration,
};

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, Recorder, Reporter};
use tokio::sync::mpsc;
use tracing::{debug, warn};

use super::events::{Occurrence, spec};
use crate::metrics::{ApiErrors, count_api_error};

/// Cheap to clone; all clones share one queue and one dedupe table.
#[derive(Clone)]
pub struct EventSink {
    tx: mpsc::UnboundedSender<(ObjectReference, Occurrence)>,
    seen: Arc<Mutex<HashMap<String, HashSet<String>>>>,
}

impl EventSink {
    /// Start the publisher task; it ends when every sink clone is dropped. Failed publishes
    /// are counted in `api_errors` (resource `event`).
    pub fn spawn(
        client: kube::Client,
        node: &str,
        timeout: Duration,
        api_errors: ApiErrors,
    ) -> Self {
        let recorder = Recorder::new(
            client,
            Reporter {
                controller: "tart-kubelet".into(),
                instance: Some(node.to_owned()),
            },
        );
        let (tx, mut rx) = mpsc::unbounded_channel::<(ObjectReference, Occurrence)>();
        tokio::spawn(async move {
            while let Some((obj, occ)) = rx.recv().await {
                let s = spec(&occ);
                let ev = Event {
                    type_: s.type_,
                    reason: s.reason.clone(),
                    note: Some(s.note),
                    action: s.action.into(),
                    secondary: None,
                };
                match tokio::time::timeout(timeout, recorder.publish(&ev, &obj)).await {
                    Ok(Ok(())) => debug!(reason = %s.reason, "event published"),
                    Ok(Err(error)) => {
                        count_api_error(&api_errors, "event", Some(&error));
                        warn!(%error, reason = %s.reason, "event not published");
                    }
                    Err(_) => {
                        count_api_error(&api_errors, "event", None);
                        warn!(reason = %s.reason, "event publish timed out");
                    }
                }
            }
        });
        Self::with_sender(tx)
    }

    /// A sink whose events go to `tx` (tests read them from the receiver).
    pub fn with_sender(tx: mpsc::UnboundedSender<(ObjectReference, Occurrence)>) -> Self {
        Self {
            tx,
            seen: Arc::default(),
        }
    }

    /// Publish `occ` about `obj` unless `key` was already used for this Pod (`uid`).
    /// Returns whether it was queued.
    pub fn emit(&self, uid: &str, obj: &ObjectReference, key: &str, occ: Occurrence) -> bool {
        let fresh = self
            .lock()
            .entry(uid.to_owned())
            .or_default()
            .insert(key.to_owned());
        if fresh {
            let _ = self.tx.send((obj.clone(), occ));
        }
        fresh
    }

    /// Forget a Pod's keys once it is gone.
    pub fn forget(&self, uid: &str) {
        self.lock().remove(uid);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, HashSet<String>>> {
        self.seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_published_once_per_pod() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let sink = EventSink::with_sender(tx);
        let obj = ObjectReference::default();
        let occ = || Occurrence::Started {
            container: "vm".into(),
        };
        assert!(sink.emit("u1", &obj, "started#0", occ()));
        assert!(!sink.emit("u1", &obj, "started#0", occ()));
        assert!(sink.emit("u1", &obj, "started#1", occ()));
        assert!(sink.emit("u2", &obj, "started#0", occ()));
        sink.forget("u1");
        assert!(sink.emit("u1", &obj, "started#0", occ()));
        let mut n = 0;
        while rx.try_recv().is_ok() {
            n += 1;
        }
        assert_eq!(n, 4);
    }
}
