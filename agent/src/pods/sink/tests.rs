//! The sink against a mocked API server: dedupe, event series, the Lease gate.

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

type ApiHandle =
    tower_test::mock::Handle<http::Request<kube::client::Body>, http::Response<kube::client::Body>>;

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
        reason: crate::lifecycle::probes::prober::EventReason::Unhealthy,
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
