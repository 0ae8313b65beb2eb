use super::*;
use crate::pods::fixtures::test_pod;

fn target(pod: &str, container: &str) -> ExecTarget {
    ExecTarget {
        namespace: test_pod().build().namespace().unwrap(),
        pod: pod.into(),
        uid: None,
        container: container.into(),
    }
}

fn running(mut p: Pod) -> Pod {
    p.status = Some(
        serde_json::from_value(serde_json::json!({
            "phase": "Running",
            "containerStatuses": [{"name": "vm", "image": "i", "imageID": "", "ready": true,
                "restartCount": 0, "state": {"running": {}}}]
        }))
        .unwrap(),
    );
    p
}

#[test]
fn the_running_vm_is_named_after_the_pod_uid() {
    let naming = VmNaming::new("tkl-").unwrap();
    let pod = running(test_pod().build());
    let name = pod.name_any();
    let vm = find_vm(Some(&pod), &naming, |_| true, &target(&name, "vm")).unwrap();
    assert_eq!(vm, naming.vm_name(&pod.uid().unwrap()).unwrap());
    let mut t = target(&name, "vm");
    t.uid = Some("00000000-0000-0000-0000-00000000beef".into());
    assert_eq!(
        find_vm(Some(&pod), &naming, |_| true, &t),
        Err(ExecError::PodNotFound)
    );
}

#[test]
fn port_forward_needs_a_running_pod_with_an_ip() {
    let mut pod = running(test_pod().build());
    let name = pod.name_any();
    let e = find_ip(Some(&pod), &name, None).unwrap_err();
    assert_eq!(e.status(), 400, "no IP yet");
    pod.status.as_mut().unwrap().pod_ip = Some("127.64.0.9".into());
    assert_eq!(
        find_ip(Some(&pod), &name, None),
        Ok("127.64.0.9".parse().unwrap())
    );
    let e = find_ip(None, "other", None).unwrap_err();
    assert_eq!(e, ExecError::PodNotFound);
}

#[test]
fn missing_pods_containers_and_stopped_vms_get_kubelets_answers() {
    let naming = VmNaming::new("tkl-").unwrap();
    let pending = test_pod().build();
    let name = pending.name_any();
    let e = find_vm(None, &naming, |_| true, &target("other", "vm")).unwrap_err();
    assert_eq!(
        (e.status(), e.to_string()),
        (404, "pod does not exist".into())
    );
    let up = running(pending.clone());
    let e = find_vm(Some(&up), &naming, |_| true, &target(&name, "db")).unwrap_err();
    assert_eq!(
        (e.status(), e.to_string()),
        (404, "container not found (\"db\")".into())
    );
    let e = find_vm(Some(&pending), &naming, |_| false, &target(&name, "vm")).unwrap_err();
    assert_eq!(e.status(), 400);
    assert!(
        e.to_string()
            .starts_with("container not found (\"vm\"): pod")
            && e.to_string().ends_with("is not running (phase Pending)"),
        "{e}"
    );
}

#[test]
fn only_a_vm_a_worker_runs_of_a_pod_not_being_deleted_takes_commands() {
    let naming = VmNaming::new("tkl-").unwrap();
    let pod = running(test_pod().build());
    let t = target(&pod.name_any(), "vm");
    let vm = naming.vm_name(&pod.uid().unwrap()).unwrap();
    let workers = RunningVms::default();
    let is_running = |v: &VmName| workers.contains(v);
    let e = find_vm(Some(&pod), &naming, is_running, &t).unwrap_err();
    assert!(
        e.to_string().ends_with("is not running (phase Running)"),
        "a Running status without a run: {e}"
    );
    let run = workers.started(&vm);
    assert_eq!(find_vm(Some(&pod), &naming, is_running, &t), Ok(vm.clone()));
    let mut deleting = pod.clone();
    deleting.metadata.deletion_timestamp =
        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
        ));
    assert_eq!(
        find_vm(Some(&deleting), &naming, is_running, &t)
            .unwrap_err()
            .status(),
        400
    );
    drop(run);
    assert_eq!(
        find_vm(Some(&pod), &naming, is_running, &t)
            .unwrap_err()
            .status(),
        400
    );
}
