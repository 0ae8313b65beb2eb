//! Publishing Pod events: one queue, one publisher task, per-Pod dedupe.
//!
//! Callers hand over an [`Occurrence`] with a sequence number naming that occurrence (for
//! example 2 for the second pull attempt); a (kind, number) already seen for that Pod is dropped,
//! so a re-run reconcile never repeats an event. A single task publishes in order as
//! events.k8s.io/v1 Events — or core/v1 Events under a node identity ([`EventApi`]) — with a
//! deadline per request, so a slow API server never blocks a Pod
//! worker and CreatingVM, Pulling, Pulled, Created, Started keep their order. Event names come
//! from [`crate::api::event_name`], valid for every valid Pod name.

use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, Mutex},
    time::Duration,
};

use k8s_openapi::{
    api::{
        core::v1::{self as core, EventSource, ObjectReference},
        events::v1::Event,
    },
    apimachinery::pkg::apis::meta::v1::{MicroTime, Time},
    jiff::Timestamp,
};
use kube::{
    Api,
    api::{ObjectMeta, PostParams},
    runtime::events::EventType,
};
use tokio::sync::mpsc;
use tracing::{debug, warn};

use super::events::{EventKind, EventSpec, Occurrence, spec};
use crate::{
    api::event_name,
    metrics::{ApiErrors, count_api_error},
};

/// Who reports the events (`reportingController`).
const CONTROLLER: &str = "tart-kubelet";

/// The occurrences already published, per Pod UID.
type Seen = HashMap<String, HashSet<(EventKind, u32)>>;

/// Which API Pod events are created with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventApi {
    /// events.k8s.io/v1.
    EventsV1,
    /// core/v1: the only Event API the Node authorizer lets a node (`system:node:<name>`)
    /// create in.
    CoreV1,
}

/// Cheap to clone; all clones share one queue and one dedupe table.
#[derive(Clone)]
pub struct EventSink {
    tx: mpsc::UnboundedSender<(ObjectReference, Occurrence)>,
    seen: Arc<Mutex<Seen>>,
}

impl EventSink {
    /// Start the publisher task; it ends when every sink clone is dropped. Failed publishes
    /// are counted in `api_errors` (resource `event`).
    pub fn spawn(
        client: kube::Client,
        node: &str,
        timeout: Duration,
        api_errors: ApiErrors,
        event_api: EventApi,
    ) -> Self {
        let (tx, mut rx) = mpsc::unbounded_channel::<(ObjectReference, Occurrence)>();
        let node = node.to_owned();
        tokio::spawn(async move {
            while let Some((obj, occ)) = rx.recv().await {
                let s = spec(&occ);
                let now = Timestamp::now();
                let ns = obj.namespace.as_deref().unwrap_or("default");
                let pp = PostParams::default();
                let create = async {
                    match event_api {
                        EventApi::EventsV1 => {
                            let api: Api<Event> = Api::namespaced(client.clone(), ns);
                            api.create(&pp, &event(&obj, &s, &node, now))
                                .await
                                .map(drop)
                        }
                        EventApi::CoreV1 => {
                            let api: Api<core::Event> = Api::namespaced(client.clone(), ns);
                            api.create(&pp, &core_event(&obj, &s, &node, now))
                                .await
                                .map(drop)
                        }
                    }
                };
                let res = tokio::time::timeout(timeout, create).await;
                match res {
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

    /// Publish `occ` about `obj` unless an occurrence of its kind numbered `seq` was already
    /// published for this Pod (`uid`). Returns whether it was queued.
    pub fn emit(&self, uid: &str, obj: &ObjectReference, seq: u32, occ: Occurrence) -> bool {
        let fresh = self
            .lock()
            .entry(uid.to_owned())
            .or_default()
            .insert((occ.kind(), seq));
        if fresh {
            let _ = self.tx.send((obj.clone(), occ));
        }
        fresh
    }

    /// Forget a Pod's occurrences once it is gone.
    pub fn forget(&self, uid: &str) {
        self.lock().remove(uid);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The Event object for `s` about `obj`, reported by this node's agent.
fn event(obj: &ObjectReference, s: &EventSpec, node: &str, now: Timestamp) -> Event {
    let regarding = obj.name.as_deref().unwrap_or(CONTROLLER);
    Event {
        metadata: ObjectMeta {
            name: Some(event_name(regarding, &format!("{:x}", now.as_nanosecond()))),
            namespace: obj.namespace.clone(),
            ..ObjectMeta::default()
        },
        event_time: Some(MicroTime(now)),
        action: Some(s.action.into()),
        reason: Some(s.reason.clone()),
        note: Some(s.note.clone()),
        type_: Some(
            match s.type_ {
                EventType::Normal => "Normal",
                EventType::Warning => "Warning",
            }
            .into(),
        ),
        regarding: Some(obj.clone()),
        reporting_controller: Some(CONTROLLER.into()),
        reporting_instance: Some(node.to_owned()),
        ..Event::default()
    }
}

/// The core/v1 Event for `s` about `obj`, as kubelet writes Pod events.
fn core_event(obj: &ObjectReference, s: &EventSpec, node: &str, now: Timestamp) -> core::Event {
    let regarding = obj.name.as_deref().unwrap_or(CONTROLLER);
    core::Event {
        metadata: ObjectMeta {
            name: Some(event_name(regarding, &format!("{:x}", now.as_nanosecond()))),
            namespace: obj.namespace.clone(),
            ..ObjectMeta::default()
        },
        involved_object: obj.clone(),
        action: Some(s.action.into()),
        reason: Some(s.reason.clone()),
        message: Some(s.note.clone()),
        type_: Some(
            match s.type_ {
                EventType::Normal => "Normal",
                EventType::Warning => "Warning",
            }
            .into(),
        ),
        source: Some(EventSource {
            component: Some(CONTROLLER.into()),
            host: Some(node.to_owned()),
        }),
        first_timestamp: Some(Time(now)),
        last_timestamp: Some(Time(now)),
        count: Some(1),
        reporting_component: Some(CONTROLLER.into()),
        reporting_instance: Some(node.to_owned()),
        ..core::Event::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_occurrence_is_published_once_per_pod() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let sink = EventSink::with_sender(tx);
        let obj = ObjectReference::default();
        let occ = || Occurrence::Started {
            container: "vm".into(),
        };
        assert!(sink.emit("u1", &obj, 0, occ()));
        assert!(!sink.emit("u1", &obj, 0, occ()));
        assert!(sink.emit("u1", &obj, 1, occ()));
        assert!(sink.emit("u2", &obj, 0, occ()));
        let killing = Occurrence::Killing {
            container: "vm".into(),
        };
        assert!(
            sink.emit("u1", &obj, 0, killing),
            "another kind, same number"
        );
        sink.forget("u1");
        assert!(sink.emit("u1", &obj, 0, occ()));
        let mut n = 0;
        while rx.try_recv().is_ok() {
            n += 1;
        }
        assert_eq!(n, 5);
    }

    #[test]
    fn the_event_of_a_pod_with_the_longest_name_is_valid() {
        let name = "p".repeat(253);
        let obj = ObjectReference {
            name: Some(name.clone()),
            namespace: Some("ci".into()),
            ..ObjectReference::default()
        };
        let s = spec(&Occurrence::Started {
            container: "vm".into(),
        });
        let ev = event(&obj, &s, "mac-1", Timestamp::UNIX_EPOCH);
        let n = ev.metadata.name.unwrap();
        assert!(n.len() <= 253, "{} chars", n.len());
        assert_eq!(ev.regarding.unwrap().name.unwrap(), name);
        assert_eq!(ev.reporting_instance.as_deref(), Some("mac-1"));
        assert_eq!(ev.type_.as_deref(), Some("Normal"));
        let core = core_event(&obj, &s, "mac-1", Timestamp::UNIX_EPOCH);
        assert!(core.metadata.name.unwrap().len() <= 253);
        assert_eq!(core.involved_object.name.unwrap(), name);
        assert_eq!(core.source.unwrap().host.as_deref(), Some("mac-1"));
        assert_eq!(core.message.as_deref(), Some(s.note.as_str()));
    }
}
