//! Publishing Pod events: one queue, one publisher task, per-Pod dedupe, event series.
//!
//! Callers hand over an [`Occurrence`] with a sequence number naming that occurrence (for
//! example 2 for the second pull attempt); a (kind, number) already seen for that Pod is dropped,
//! so a re-run reconcile never repeats an event. A single task publishes in order as
//! events.k8s.io/v1 Events — or core/v1 Events under a node identity ([`EventApi`]) — with a
//! deadline per request, so a slow API server never blocks a Pod
//! worker and CreatingVM, Pulling, Pulled, Created, Started keep their order. Event names come
//! from [`crate::api::event_name`], valid for every valid Pod name. A repeat of an event
//! already published (a failing probe, say) is counted into that Event ([`series`]) instead of
//! making a new one. Nothing is published by an agent that does not hold its Node's Lease
//! ([`Fence::holds`]): a successor may be running the Pod.

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
    api::{ObjectMeta, Patch, PatchParams, PostParams},
    runtime::events::EventType,
};
use tokio::{sync::mpsc, time::Instant};
use tracing::{debug, warn};

use self::series::{Correlator, Key, Step};
use super::events::{EventKind, EventSpec, Occurrence, spec};
use crate::{
    api::event_name,
    metrics::{ApiErrors, count_api_error},
    node::fence::Fence,
};

pub(crate) mod series;

/// Who reports the events (`reportingController`).
const CONTROLLER: &str = "tart-kubelet";

/// The occurrences already published, per Pod UID.
type Seen = HashMap<String, HashSet<(EventKind, u32)>>;

/// Which API Pod events are created with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventApi {
    /// events.k8s.io/v1.
    EventsV1,
    /// core/v1: the only Event API the Node authorizer lets a node (`system:node:<name>`)
    /// create in.
    CoreV1,
}

/// Cheap to clone; all clones share one queue, one dedupe table and one set of series.
#[derive(Clone)]
pub(crate) struct EventSink {
    tx: mpsc::UnboundedSender<(ObjectReference, Occurrence)>,
    seen: Arc<Mutex<Seen>>,
    series: Arc<Mutex<Correlator>>,
}

/// What the publisher task needs.
struct Publisher {
    client: kube::Client,
    node: String,
    timeout: Duration,
    api_errors: ApiErrors,
    event_api: EventApi,
    lease: Fence,
    series: Arc<Mutex<Correlator>>,
}

impl EventSink {
    /// Start the publisher task; it ends when every sink clone is dropped. Nothing is
    /// published unless this agent holds the Node's Lease at that moment (`lease`). Failed
    /// publishes are counted in `api_errors` (resource `event`).
    pub(crate) fn spawn(
        client: kube::Client,
        node: &str,
        timeout: Duration,
        api_errors: ApiErrors,
        event_api: EventApi,
        lease: Fence,
    ) -> Self {
        let (tx, mut rx) = mpsc::unbounded_channel::<(ObjectReference, Occurrence)>();
        let sink = Self::with_sender(tx);
        let publisher = Publisher {
            client,
            node: node.to_owned(),
            timeout,
            api_errors,
            event_api,
            lease,
            series: sink.series.clone(),
        };
        tokio::spawn(async move {
            while let Some((obj, occ)) = rx.recv().await {
                publisher.publish(&obj, &spec(&occ)).await;
            }
        });
        sink
    }

    /// A sink whose events go to `tx` (tests read them from the receiver).
    pub(crate) fn with_sender(tx: mpsc::UnboundedSender<(ObjectReference, Occurrence)>) -> Self {
        Self {
            tx,
            seen: Arc::default(),
            series: Arc::default(),
        }
    }

    /// Publish `occ` about `obj` unless an occurrence of its kind numbered `seq` was already
    /// published for this Pod (`uid`). Returns whether it was queued.
    pub(crate) fn emit(&self, uid: &str, obj: &ObjectReference, seq: u32, occ: Occurrence) -> bool {
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

    /// Forget a Pod's occurrences and event series once it is gone.
    pub(crate) fn forget(&self, uid: &str) {
        self.lock().remove(uid);
        lock(&self.series).forget_object(uid);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Seen> {
        lock(&self.seen)
    }
}

fn lock<V>(m: &Mutex<V>) -> std::sync::MutexGuard<'_, V> {
    // Every critical section is one map operation: a panic cannot leave it half-done.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

// === impl Publisher ===

impl Publisher {
    /// Publish one occurrence of `s` about `obj`: a new Event, or a repeat counted into the
    /// live one ([`series`]). An Event that is gone (expired by the API server's event TTL) is
    /// created anew.
    async fn publish(&self, obj: &ObjectReference, s: &EventSpec) {
        if !self.lease.holds() {
            debug!(reason = %s.reason, "event not published: this agent does not hold the Node's Lease");
            return;
        }
        let key = Key::of(obj, s);
        let step = lock(&self.series).observe(&key, Instant::now());
        let res = match &step {
            Step::Create => self.create(obj, s, &key).await,
            Step::Patch { name, count } => match self.patch(obj, s, name, *count).await {
                Err(Some(kube::Error::Api(e))) if e.code == 404 => {
                    lock(&self.series).forget(&key);
                    self.create(obj, s, &key).await
                }
                other => other,
            },
        };
        match res {
            Ok(()) => debug!(reason = %s.reason, ?step, "event published"),
            Err(error) => {
                lock(&self.series).forget(&key);
                count_api_error(&self.api_errors, "event", error.as_ref());
                match error {
                    Some(error) => warn!(%error, reason = %s.reason, "event not published"),
                    None => warn!(reason = %s.reason, "event publish timed out"),
                }
            }
        }
    }

    /// Create a new Event and start its series. `Err(None)` is a timeout.
    async fn create(
        &self,
        obj: &ObjectReference,
        s: &EventSpec,
        key: &Key,
    ) -> Result<(), Option<kube::Error>> {
        let now = Timestamp::now();
        let ns = obj.namespace.as_deref().unwrap_or("default");
        let pp = PostParams::default();
        let create = async {
            match self.event_api {
                EventApi::EventsV1 => {
                    let api: Api<Event> = Api::namespaced(self.client.clone(), ns);
                    let ev = event(obj, s, &self.node, now);
                    api.create(&pp, &ev).await.map(|e| e.metadata.name)
                }
                EventApi::CoreV1 => {
                    let api: Api<core::Event> = Api::namespaced(self.client.clone(), ns);
                    let ev = core_event(obj, s, &self.node, now);
                    api.create(&pp, &ev).await.map(|e| e.metadata.name)
                }
            }
        };
        let name = self.deadline(create).await?;
        if let Some(name) = name {
            lock(&self.series).created(key.clone(), name, Instant::now());
        }
        Ok(())
    }

    /// Count one more occurrence into Event `name` (`count` in all). `Err(None)` is a timeout.
    async fn patch(
        &self,
        obj: &ObjectReference,
        s: &EventSpec,
        name: &str,
        count: i32,
    ) -> Result<(), Option<kube::Error>> {
        let now = Timestamp::now();
        let ns = obj.namespace.as_deref().unwrap_or("default");
        let pp = PatchParams::default();
        let body = repeat_patch(self.event_api, s, count, now);
        let patch = async {
            match self.event_api {
                EventApi::EventsV1 => {
                    let api: Api<Event> = Api::namespaced(self.client.clone(), ns);
                    api.patch(name, &pp, &Patch::Merge(&body)).await.map(drop)
                }
                EventApi::CoreV1 => {
                    let api: Api<core::Event> = Api::namespaced(self.client.clone(), ns);
                    api.patch(name, &pp, &Patch::Merge(&body)).await.map(drop)
                }
            }
        };
        self.deadline(patch).await
    }

    async fn deadline<R>(
        &self,
        f: impl std::future::Future<Output = Result<R, kube::Error>>,
    ) -> Result<R, Option<kube::Error>> {
        match tokio::time::timeout(self.timeout, f).await {
            Ok(r) => r.map_err(Some),
            Err(_) => Err(None),
        }
    }
}

/// The merge patch that counts a repeat into an Event: events.k8s.io's `series`, or core/v1's
/// `count` and `lastTimestamp` (with the message, as kubelet's recorder writes it).
fn repeat_patch(api: EventApi, s: &EventSpec, count: i32, now: Timestamp) -> serde_json::Value {
    match api {
        EventApi::EventsV1 => serde_json::json!({
            "series": { "count": count, "lastObservedTime": MicroTime(now) }
        }),
        EventApi::CoreV1 => serde_json::json!({
            "count": count, "lastTimestamp": Time(now), "message": s.note
        }),
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
mod tests;
