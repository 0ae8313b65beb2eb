use std::time::Duration;

use http::{Request, Response};
use k8s_openapi::{List, api::core::v1::Pod};
use kube::client::Body;
use tart::testing::MemTart;
use tower_test::mock;

use super::*;
use crate::pods::{
    context::NodeView,
    ending::UNKNOWN_EXIT,
    fixtures::{UID, rig_with_client, test_pod},
    input::FINALIZER,
    plan::Process,
};

/// Recovery of one stopped VM whose Pod status never said it started; `ran` writes its
/// `tart run` log first.
async fn recover_stopped(ran: bool) -> Process {
    let (svc, handle) = mock::pair::<Request<Body>, Response<Body>>();
    let dir = tempfile::tempdir().unwrap();
    let tart = MemTart::new().with_cached("ghcr.io/cirruslabs/macos:15");
    let mut rig = rig_with_client(tart.clone(), 2, kube::Client::new(svc, "default"));
    std::sync::Arc::get_mut(&mut rig.worker)
        .unwrap()
        .cfg
        .vm_log_dir = dir.path().into();
    let shared = rig.shared(NodeView::default());
    let vm = shared.naming.vm_name(UID).unwrap();
    tart.clone_vm("ghcr.io/cirruslabs/macos:15", &vm, None)
        .await
        .unwrap();
    if ran {
        std::fs::write(shared.worker.cfg.run_opts(&vm).log_path, "booting\n").unwrap();
    }
    let pod = test_pod().finalizer(FINALIZER).build();
    let serve = tokio::spawn(async move {
        let mut handle = std::pin::pin!(handle);
        let (_, reply) = handle.next_request().await.expect("pod list");
        let list = List::<Pod> {
            items: vec![pod],
            ..List::default()
        };
        let body = serde_json::to_vec(&list).unwrap();
        reply.send_response(Response::builder().body(Body::from(body)).unwrap());
    });
    let orphans = tokio::time::timeout(Duration::from_secs(2), recover(&shared))
        .await
        .expect("recovery hung")
        .expect("recovery failed");
    serve.await.unwrap();
    assert!(orphans.is_empty());
    let state = shared.worker_state(UID).expect("a worker for the Pod");
    state.facts.process
}

#[tokio::test]
async fn a_stopped_vm_that_ran_before_is_not_provisioned_again() {
    assert_eq!(
        recover_stopped(true).await,
        Process::Exited { code: UNKNOWN_EXIT },
        "a VM with a run log was started by a predecessor"
    );
}

#[tokio::test]
async fn a_stopped_vm_that_never_ran_resumes_provisioning() {
    assert_eq!(recover_stopped(false).await, Process::None);
}

#[test]
fn workers_of_pods_missing_from_the_cache_are_vanished() {
    use kube::runtime::{reflector::store::Writer, watcher::Event};
    let mut writer = Writer::<Pod>::default();
    writer.apply_watcher_event(&Event::Apply(test_pod().build()));
    let store = writer.as_reader();
    let obj = |ns: &str, name: &str| ObjectReference {
        namespace: Some(ns.into()),
        name: Some(name.into()),
        ..ObjectReference::default()
    };
    assert!(!vanished(&store, UID, &obj("ci", "runner")), "in the cache");
    assert!(
        vanished(&store, "another-uid", &obj("ci", "runner")),
        "its name now belongs to a new Pod"
    );
    assert!(
        vanished(&store, UID, &obj("ci", "other")),
        "not in the cache"
    );
    assert!(
        vanished(&store, UID, &obj("other", "runner")),
        "another namespace"
    );
    assert!(vanished(
        &Writer::<Pod>::default().as_reader(),
        UID,
        &obj("ci", "runner")
    ));
}

#[tokio::test]
async fn the_sweep_removes_orphan_vms_with_their_guest_dirs_and_leftover_guest_dirs() {
    let tart = MemTart::new().with_cached("ghcr.io/cirruslabs/macos:15");
    let rig = rig_with_client(tart.clone(), 2, crate::pods::fixtures::offline_client());
    let shared = rig.shared(NodeView::default());
    let layout = &shared.worker.cfg.guest.layout;
    let orphan = shared.naming.vm_name(UID).unwrap();
    tart.clone_vm("ghcr.io/cirruslabs/macos:15", &orphan, None)
        .await
        .unwrap();
    let gone = shared
        .naming
        .vm_name("3f2c1a9e-5b7d-4e21-9a0b-c1d2e3f4a5ff")
        .unwrap();
    for vm in [&orphan, &gone] {
        layout.create(vm, &[]).unwrap();
    }
    let other = layout.vm_dir(&orphan).with_file_name("not-ours");
    std::fs::create_dir(&other).unwrap();
    sweep(&shared, &HashSet::new()).await;
    assert!(tart.vm_names().is_empty(), "the orphan VM is deleted");
    assert!(!layout.vm_dir(&orphan).exists(), "its guest dir is removed");
    assert!(
        !layout.vm_dir(&gone).exists(),
        "a leftover guest dir is removed"
    );
    assert!(
        other.exists(),
        "a directory not named by our scheme is left alone"
    );
}
