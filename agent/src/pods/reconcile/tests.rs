//! Reconcile against a mocked API server: each test plays one scenario, answering the requests
//! the reconciler makes in order (method, path, body) and failing on any other. Every wait is
//! bounded.

use std::{sync::Arc, time::Duration};

use http::{Method, Request, Response};
use k8s_openapi::{
    api::core::v1::{Pod, PodStatus},
    jiff::Timestamp,
};
use kube::{Client, ResourceExt, client::Body, runtime::controller::Action};
use serde_json::{Value, json};
use tart::{Op, testing::MemTart};
use tokio::time::timeout;
use tower_test::mock::{self, Handle, SendResponse};

use super::reconcile;
use crate::pods::{
    admission::{HostLimits, admit},
    context::{NodeView, Shared},
    fixtures::{Rig, UID, rig_with_client, test_pod},
    input::{FINALIZER, pod_facts, worker_input},
    plan::Process,
    worker::{self, Start, WorkerHandle, WorkerState},
};
use crate::vm_name::VmNaming;

const WAIT: Duration = Duration::from_secs(2);
const POD: &str = "/api/v1/namespaces/ci/pods/runner";

type ApiHandle = Handle<Request<Body>, Response<Body>>;

/// One request the reconciler made.
struct Call {
    method: Method,
    path: String,
    body: Value,
    reply: SendResponse<Response<Body>>,
}

impl Call {
    fn answer(self, obj: &impl serde::Serialize) {
        let body = serde_json::to_vec(obj).unwrap();
        self.reply
            .send_response(Response::builder().body(Body::from(body)).unwrap());
    }
}

fn api() -> (Client, ApiHandle) {
    let (svc, handle) = mock::pair::<Request<Body>, Response<Body>>();
    (Client::new(svc, "default"), handle)
}

async fn next_call(handle: &mut ApiHandle) -> Call {
    let (req, reply) = timeout(WAIT, handle.next_request())
        .await
        .expect("the reconciler made no request")
        .expect("the client is gone");
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    let bytes = req.into_body().collect_bytes().await.unwrap();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Call {
        method,
        path,
        body,
        reply,
    }
}

/// Run one reconcile of `pod` while `serve` answers its requests.
async fn reconcile_with<F, Fut>(shared: &Arc<Shared<MemTart>>, pod: &Pod, serve: F) -> Action
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let run = tokio::spawn(reconcile(Arc::new(pod.clone()), shared.clone()));
    serve().await;
    timeout(WAIT, run)
        .await
        .expect("reconcile did not finish")
        .unwrap()
        .expect("reconcile failed")
}

fn setup(tart: MemTart) -> (Rig, Arc<Shared<MemTart>>, ApiHandle) {
    let (client, handle) = api();
    let rig = rig_with_client(tart, 2, client);
    let shared = rig.shared(NodeView::default());
    (rig, shared, handle)
}

/// Give `pod` a worker, as a first reconcile would, and wait until `pred` holds.
async fn with_worker(
    shared: &Shared<MemTart>,
    pod: &Pod,
    pred: impl Fn(&WorkerState) -> bool,
) -> WorkerState {
    let a = admit(pod, &HostLimits::UNLIMITED).unwrap();
    let input = worker_input(
        &Arc::new(pod.clone()),
        &a,
        pod_facts(pod, false, false, Timestamp::now()),
        Duration::from_secs(5),
        Ok(Default::default()),
    );
    let vm = VmNaming::default().vm_name(UID).unwrap();
    let h: WorkerHandle = worker::spawn(shared.worker.clone(), vm, input, Start::Fresh, 0);
    let mut rx = h.state.clone();
    shared.with_workers(|w| w.insert(UID.into(), h));
    timeout(WAIT, rx.wait_for(|s| pred(s)))
        .await
        .expect("worker never got there")
        .unwrap()
        .clone()
}

fn running(s: &WorkerState) -> bool {
    s.pod_ip.is_some() && matches!(s.facts.process, Process::Running { marked: true, .. })
}

fn assert_no_call(handle: &mut ApiHandle) {
    // A request still waiting for an answer would be in the handle's queue.
    let polled = futures::FutureExt::now_or_never(handle.next_request());
    assert!(polled.is_none(), "an unexpected API request was made");
}

#[tokio::test]
async fn a_new_pod_gets_our_finalizer_then_is_requeued_at_once() {
    let (_rig, shared, mut handle) = setup(MemTart::new());
    let mut pod = test_pod().build();
    pod.metadata.resource_version = Some("41".into());
    let action = reconcile_with(&shared, &pod, || async {
        let c = next_call(&mut handle).await;
        assert_eq!((c.method.clone(), c.path.as_str()), (Method::PATCH, POD));
        assert_eq!(
            c.body,
            json!({"metadata": {"finalizers": [FINALIZER], "resourceVersion": "41"}}),
            "a compare-and-swap on the finalizer list"
        );
        c.answer(&pod);
    })
    .await;
    assert_eq!(action, Action::requeue(Duration::from_millis(50)));
    assert!(
        shared.with_workers(|w| w.is_empty()),
        "no VM work before the finalizer is on"
    );
    assert_no_call(&mut handle);
}

#[tokio::test]
async fn status_is_patched_when_it_changed_and_not_again_when_it_did_not() {
    let (_rig, shared, mut handle) = setup(MemTart::new());
    let pod = test_pod().finalizer(FINALIZER).build();
    with_worker(&shared, &pod, running).await;
    let mut written = Value::Null;
    let action = reconcile_with(&shared, &pod, || async {
        let c = next_call(&mut handle).await;
        assert_eq!(c.method, Method::PATCH);
        assert_eq!(c.path, format!("{POD}/status"));
        written = c.body["status"].clone();
        assert_eq!(written["phase"], "Running");
        c.answer(&pod);
    })
    .await;
    assert_eq!(action, Action::requeue(Duration::from_secs(300)));
    // The watch event our own patch causes: the server now holds what we wrote.
    let mut server = written.clone();
    for c in server["conditions"].as_array_mut().unwrap() {
        c.as_object_mut().unwrap().retain(|_, v| !v.is_null());
    }
    let mut patched = pod.clone();
    patched.status = Some(serde_json::from_value::<PodStatus>(server).unwrap());
    let action = reconcile_with(&shared, &patched, || async {}).await;
    assert_eq!(action, Action::requeue(Duration::from_secs(300)));
    assert_no_call(&mut handle);
}

#[tokio::test]
async fn a_status_changed_by_someone_else_is_put_right() {
    let (_rig, shared, mut handle) = setup(MemTart::new());
    let pod = test_pod().finalizer(FINALIZER).build();
    with_worker(&shared, &pod, running).await;
    let mut written = Value::Null;
    reconcile_with(&shared, &pod, || async {
        let c = next_call(&mut handle).await;
        written = c.body["status"].clone();
        c.answer(&pod);
    })
    .await;
    // The node lifecycle controller marks the Pod not ready while the agent was unreachable.
    let mut status: PodStatus = serde_json::from_value(written).unwrap();
    for c in status.conditions.iter_mut().flatten() {
        if c.type_ == "Ready" {
            c.status = "False".into();
            c.reason = Some("NodeNotReady".into());
        }
    }
    let mut marked = pod.clone();
    marked.status = Some(status);
    reconcile_with(&shared, &marked, || async {
        let c = next_call(&mut handle).await;
        assert_eq!(c.path, format!("{POD}/status"));
        let ready = c.body["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "Ready")
            .unwrap()
            .clone();
        assert_eq!(ready["status"], "True");
        assert_eq!(ready["reason"], Value::Null, "the stale reason is deleted");
        c.answer(&marked);
    })
    .await;
}

#[tokio::test]
async fn deletion_stops_and_deletes_the_vm_then_releases_the_finalizer_then_deletes_the_pod() {
    let (rig, shared, mut handle) = setup(MemTart::new());
    let pod = test_pod().finalizer(FINALIZER).build();
    with_worker(&shared, &pod, running).await;
    let deleting = test_pod().finalizer(FINALIZER).deleting(1).build();
    // 1. The VM goes first: the reconcile only hands the deletion to the worker (and keeps
    //    the status current); no finalizer change, no Pod deletion yet.
    reconcile_with(&shared, &deleting, || async {
        let c = next_call(&mut handle).await;
        assert_eq!(
            c.path,
            format!("{POD}/status"),
            "only the status may be written"
        );
        c.answer(&deleting);
    })
    .await;
    let mut rx = shared.with_workers(|w| w[UID].state.clone());
    timeout(WAIT, rx.wait_for(|s| !s.facts.cloned))
        .await
        .expect("the worker never deleted the VM")
        .unwrap();
    let ops: Vec<Op> = rig.tart.calls().iter().map(|c| c.op).collect();
    let stop = ops.iter().position(|o| *o == Op::Stop).expect("no stop");
    let delete = ops
        .iter()
        .position(|o| *o == Op::Delete)
        .expect("no delete");
    assert!(stop < delete, "{ops:?}");
    // 2. The VM is gone: release the finalizer.
    reconcile_with(&shared, &deleting, || async {
        let c = next_call(&mut handle).await;
        assert_eq!((c.method.clone(), c.path.as_str()), (Method::PATCH, POD));
        assert_eq!(c.body["metadata"]["finalizers"], json!([]));
        c.answer(&deleting);
    })
    .await;
    // 3. Without our finalizer: delete the Pod with grace 0 and a UID precondition.
    let released = test_pod().deleting(1).build();
    let action = reconcile_with(&shared, &released, || async {
        let c = next_call(&mut handle).await;
        assert_eq!((c.method.clone(), c.path.as_str()), (Method::DELETE, POD));
        assert_eq!(c.body["gracePeriodSeconds"], 0);
        assert_eq!(c.body["preconditions"]["uid"], UID);
        c.answer(&released);
    })
    .await;
    assert_eq!(action, Action::await_change());
    assert!(
        shared.with_workers(|w| w.is_empty()),
        "the worker is let go"
    );
    assert_eq!(released.name_any(), "runner");
    assert_no_call(&mut handle);
}

#[tokio::test]
async fn a_pod_whose_image_pulls_shows_container_creating_at_once() {
    let tart = MemTart::new();
    tart.set_latency(Op::Pull, Duration::from_secs(600));
    let (_rig, shared, mut handle) = setup(tart);
    let pod = test_pod().finalizer(FINALIZER).build();
    reconcile_with(&shared, &pod, || async {
        let c = next_call(&mut handle).await;
        assert_eq!(
            c.path,
            format!("{POD}/status"),
            "the first status, before the pull ends"
        );
        let status = &c.body["status"];
        assert_eq!(status["phase"], "Pending");
        let waiting = &status["containerStatuses"][0]["state"]["waiting"];
        assert_eq!(waiting["reason"], "ContainerCreating");
        c.answer(&pod);
    })
    .await;
    let state = shared.worker_state(UID).expect("a worker pulls");
    assert!(!state.facts.image_ready, "the pull is still running");
}

#[tokio::test]
async fn an_agent_that_does_not_hold_its_lease_writes_nothing() {
    let (_rig, shared, mut handle) = setup(MemTart::new());
    let pod = test_pod().finalizer(FINALIZER).build();
    with_worker(&shared, &pod, running).await;
    shared.lease.raise("n_other".into());
    let res = timeout(WAIT, reconcile(Arc::new(pod.clone()), shared.clone()))
        .await
        .expect("reconcile did not finish");
    assert!(
        matches!(
            res,
            Err(super::Error::LeaseNotHeld {
                what: "patch pod status"
            })
        ),
        "the status patch is withheld: {res:?}"
    );
    assert_no_call(&mut handle);
    let new = test_pod().build();
    let res = timeout(WAIT, reconcile(Arc::new(new), shared.clone()))
        .await
        .expect("reconcile did not finish");
    assert!(
        matches!(res, Err(super::Error::LeaseNotHeld { .. })),
        "the finalizer is not added: {res:?}"
    );
    assert_no_call(&mut handle);
}
