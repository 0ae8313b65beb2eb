//! [`ExecSource`] on the Pod side: a request's Pod is looked up in the controller's store by
//! reference, and its VM runs when a worker of this agent holds its run ([`RunningVms`]);
//! commands start with `tart exec`. The refusals keep kubelet's words.

use std::{net::IpAddr, sync::Arc};

use futures::{FutureExt, future::BoxFuture};
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use tart::{ExecOpts, ExecSession, Tart, VmName};

use super::{RunningVms, ServedPods};
use crate::{
    kubelet_api::{
        PodSource,
        stream::{ExecSource, ExecTarget, guest::ExecError},
    },
    vm_name::VmNaming,
};

/// [`ExecSource`] over the Pods this agent runs, the VMs its workers run and a [`Tart`] driver.
pub struct GuestExec<T> {
    pods: ServedPods,
    naming: VmNaming,
    tart: Arc<T>,
}

impl<T: Tart> GuestExec<T> {
    /// Execs into the VMs `naming` gives the Pods `pods` serves.
    pub fn new(pods: ServedPods, naming: VmNaming, tart: Arc<T>) -> Self {
        Self { pods, naming, tart }
    }
}

/// PURE: `pod`, when it is the instance `uid` names (any instance without one).
fn instance<'a>(pod: Option<&'a Pod>, uid: Option<&str>) -> Result<&'a Pod, ExecError> {
    pod.filter(|p| uid.is_none_or(|u| p.uid().as_deref() == Some(u)))
        .ok_or(ExecError::PodNotFound)
}

fn phase(pod: &Pod) -> String {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.clone())
        .unwrap_or_else(|| "Pending".into())
}

/// PURE: the IP of `pod` (the Pod `name` names, when found), when it runs.
///
/// # Errors
/// [`ExecError::PodNotFound`], or [`ExecError::NotRunning`] (container `""`) without a
/// running phase or an IP.
pub fn find_ip(pod: Option<&Pod>, name: &str, uid: Option<&str>) -> Result<IpAddr, ExecError> {
    let pod = instance(pod, uid)?;
    let phase = phase(pod);
    let ip = pod
        .status
        .as_ref()
        .and_then(|s| s.pod_ip.as_deref())
        .and_then(|ip| ip.parse().ok());
    match ip {
        Some(ip) if phase == "Running" => Ok(ip),
        _ => Err(ExecError::NotRunning {
            container: String::new(),
            pod: name.to_owned(),
            phase,
        }),
    }
}

/// PURE: the VM of `target` in `pod` (the Pod it names, when found), when `running` says a
/// worker holds its run and the Pod is not being deleted; else kubelet's refusal.
pub fn find_vm(
    pod: Option<&Pod>,
    naming: &VmNaming,
    running: impl Fn(&VmName) -> bool,
    target: &ExecTarget,
) -> Result<VmName, ExecError> {
    let pod = instance(pod, target.uid.as_deref())?;
    let has = pod
        .spec
        .as_ref()
        .is_some_and(|s| s.containers.iter().any(|c| c.name == target.container));
    if !has {
        return Err(ExecError::ContainerNotFound(target.container.clone()));
    }
    let vm = pod.uid().and_then(|uid| naming.vm_name(&uid).ok());
    match vm {
        Some(vm) if running(&vm) && pod.metadata.deletion_timestamp.is_none() => Ok(vm),
        _ => Err(ExecError::NotRunning {
            container: target.container.clone(),
            pod: target.pod.clone(),
            phase: phase(pod),
        }),
    }
}

impl<T: Tart> ExecSource for GuestExec<T> {
    fn running_vm(&self, target: &ExecTarget) -> Result<VmName, ExecError> {
        let pod = self.pods.pod(&target.namespace, &target.pod);
        let running: &RunningVms = self.pods.running();
        find_vm(
            pod.as_deref(),
            &self.naming,
            |vm| running.contains(vm),
            target,
        )
    }

    fn guest_ip(&self, namespace: &str, pod: &str, uid: Option<&str>) -> Result<IpAddr, ExecError> {
        find_ip(self.pods.pod(namespace, pod).as_deref(), pod, uid)
    }

    fn start(
        &self,
        vm: VmName,
        argv: Vec<String>,
        opts: ExecOpts,
    ) -> BoxFuture<'static, tart::Result<ExecSession>> {
        let tart = self.tart.clone();
        async move { tart.exec_streaming(&vm, &argv, opts).await }.boxed()
    }
}

#[cfg(test)]
mod tests {
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
}
