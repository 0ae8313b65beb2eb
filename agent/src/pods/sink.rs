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

pub mod series;

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

/// Cheap to clone; all clones share one queue, one dedupe table and one set of series.
#[derive(Clone)]
pub struct EventSink {
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
    pub fn spawn(
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
    pub fn with_sender(tx: mpsc::UnboundedSender<(ObjectReference, Occurrence)>) -> Self {
        Self {
            tx,
            seen: Arc::default(),
            series: Arc::default(),
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

    /// Forget a Pod's occurrences and event series once it is gone.
    pub fn forget(&self, uid: &str) {
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

    type ApiHandle = tower_test::mock::Handle<
        http::Request<kube::client::Body>,
        http::Response<kube::client::Body>,
    >;

    /// A publishing sink on a mocked API server, and the handle that answers it.
    fn mocked(api: EventApi, lease: Fence) -> (EventSink, ApiHandle) {
        let (svc, handle) = tower_test::mock::pair();
        let client = kube::Client::new(svc, "default");
        let sink = EventSink::spawn(
            client,
            "mac-1",
            Duration::from_secs(1),
            ApiErrors::default(),
            api,
            lease,
        );
        (sink, handle)
    }

    /// The next request: (method, path, JSON body), answered with its own body.
    async fn next(handle: &mut ApiHandle) -> (String, String, serde_json::Value) {
        let (req, reply) = tokio::time::timeout(Duration::from_secs(1), handle.next_request())
            .await
            .expect("no request")
            .expect("client gone");
        let (method, path) = (req.method().to_string(), req.uri().path().to_owned());
        let bytes = req.into_body().collect_bytes().await.unwrap();
        let body: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        // A create is answered with what was sent, a patch with an Event of that name.
        let answer = if method == "PATCH" {
            serde_json::json!({"metadata": {"name": path.rsplit('/').next()}})
        } else {
            body.clone()
        };
        reply.send_response(
            http::Response::builder()
                .body(kube::client::Body::from(
                    serde_json::to_vec(&answer).unwrap(),
                ))
                .unwrap(),
        );
        (method, path, body)
    }

    fn pod_ref() -> ObjectReference {
        ObjectReference {
            kind: Some("Pod".into()),
            namespace: Some("ci".into()),
            name: Some("runner".into()),
            uid: Some("u1".into()),
            ..ObjectReference::default()
        }
    }

    fn failed_probe(code: u16) -> Occurrence {
        Occurrence::Probe {
            reason: crate::pods::probes::prober::EventReason::Unhealthy,
            message: format!("Readiness probe failed: HTTP probe failed with statuscode: {code}"),
        }
    }

    #[tokio::test]
    async fn repeated_probe_failures_are_one_event_series_with_a_count() {
        let (sink, mut handle) = mocked(EventApi::EventsV1, Fence::held(Duration::from_secs(40)));
        let obj = pod_ref();
        sink.emit("u1", &obj, 0, failed_probe(503));
        let (method, path, created) = next(&mut handle).await;
        assert_eq!(
            (method.as_str(), path.as_str()),
            ("POST", "/apis/events.k8s.io/v1/namespaces/ci/events")
        );
        let name = created["metadata"]["name"].as_str().unwrap().to_owned();
        for (seq, count) in [(1, 2), (2, 3)] {
            sink.emit("u1", &obj, seq, failed_probe(503));
            let (method, path, patch) = next(&mut handle).await;
            assert_eq!(method, "PATCH", "repeat {seq} is counted, not created");
            assert_eq!(
                path,
                format!("/apis/events.k8s.io/v1/namespaces/ci/events/{name}")
            );
            assert_eq!(patch["series"]["count"], count);
        }
        // Another message is another event.
        sink.emit("u1", &obj, 3, failed_probe(500));
        let (method, _, _) = next(&mut handle).await;
        assert_eq!(method, "POST");
    }

    #[test]
    fn a_repeat_patches_the_count_and_the_last_time() {
        let s = spec(&failed_probe(503));
        let at = Timestamp::from_second(1_700_000_000).unwrap();
        let v1 = repeat_patch(EventApi::EventsV1, &s, 3, at);
        assert_eq!(v1["series"]["count"], 3);
        assert_eq!(
            v1["series"]["lastObservedTime"],
            "2023-11-14T22:13:20.000000Z"
        );
        let core = repeat_patch(EventApi::CoreV1, &s, 3, at);
        assert_eq!(core["count"], 3);
        assert_eq!(core["lastTimestamp"], "2023-11-14T22:13:20Z");
        assert_eq!(core["message"], s.note.as_str());
    }

    #[tokio::test]
    async fn nothing_is_published_without_the_lease() {
        let lease = Fence::default();
        let (sink, mut handle) = mocked(EventApi::CoreV1, lease.clone());
        let obj = pod_ref();
        let started = || Occurrence::Started {
            container: "vm".into(),
        };
        sink.emit("u1", &obj, 0, started());
        // On this single-threaded runtime the publisher takes the event now, while no Lease
        // write has been seen.
        tokio::task::yield_now().await;
        lease.renewed(Instant::now(), Duration::from_secs(40));
        let killing = Occurrence::Killing {
            container: "vm".into(),
        };
        sink.emit("u1", &obj, 0, killing);
        let (method, _, body) = next(&mut handle).await;
        assert_eq!(method, "POST");
        assert_eq!(
            body["reason"], "Killing",
            "Started was dropped while the Lease was not held"
        );
        // Fenced: nothing again, though the Lease was written after.
        lease.raise("n_other".into());
        lease.renewed(Instant::now(), Duration::from_secs(40));
        sink.emit("u1", &obj, 1, started());
        drop(sink);
        let rest = tokio::time::timeout(Duration::from_secs(1), handle.next_request()).await;
        assert!(
            matches!(rest, Ok(None)),
            "the publisher ended without another request"
        );
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
