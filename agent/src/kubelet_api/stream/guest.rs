//! The seam between a streaming request and the guest: [`ExecSource`] finds the running VM
//! of `namespace/pod/container` (with kubelet's answer when there is none) and starts a
//! command in it, and finds a running Pod's IP for port-forward. [`GuestExec`] is its implementation over the Pods this agent runs and `tart exec`.

use std::{net::IpAddr, sync::Arc};

use futures::{FutureExt, future::BoxFuture};
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use tart::{ExecOpts, ExecSession, Tart, VmName};

use crate::{kubelet_api::PodSource, vm_name::VmNaming};

/// The container an exec request names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecTarget {
    /// Namespace.
    pub namespace: String,
    /// Pod name.
    pub pod: String,
    /// Pod UID, when the path carries one (it narrows the lookup to that instance).
    pub uid: Option<String>,
    /// Container name.
    pub container: String,
}

/// Why there is nothing to exec into, in kubelet's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExecError {
    /// No such Pod on this node.
    #[error("pod does not exist")]
    PodNotFound,
    /// The Pod has no container of that name.
    #[error("container not found ({0:?})")]
    ContainerNotFound(String),
    /// The container's VM is not running (the Pod is pending, finished, or restarting).
    #[error("container not found ({container:?}): pod {pod:?} is not running (phase {phase})")]
    NotRunning {
        /// Container name.
        container: String,
        /// Pod name.
        pod: String,
        /// The Pod's phase.
        phase: String,
    },
}

impl ExecError {
    /// The HTTP status of the answer (before any upgrade): 404 as kubelet's logs answer an
    /// unknown Pod or container, 400 for a VM that is not running (kubelet's exec says 500
    /// for both, which kubectl shows as an internal error).
    pub fn status(&self) -> u16 {
        match self {
            Self::PodNotFound | Self::ContainerNotFound(_) => 404,
            Self::NotRunning { .. } => 400,
        }
    }
}

/// Finds a container's running VM and starts commands in it.
pub trait ExecSource: Send + Sync + 'static {
    /// The running VM behind `target`.
    ///
    /// # Errors
    /// [`ExecError`] when the Pod is not on this node, has no such container, or is not
    /// running.
    fn running_vm(&self, target: &ExecTarget) -> Result<VmName, ExecError>;

    /// The IP of the running Pod `namespace/pod` (and `uid`, when given), for port-forward.
    ///
    /// # Errors
    /// [`ExecError`] when the Pod is not on this node or not running with an IP.
    fn guest_ip(&self, namespace: &str, pod: &str, uid: Option<&str>) -> Result<IpAddr, ExecError>;

    /// Starts `argv` in `vm` (`tart exec`); dropping the session kills the command.
    fn start(
        &self,
        vm: VmName,
        argv: Vec<String>,
        opts: ExecOpts,
    ) -> BoxFuture<'static, tart::Result<ExecSession>>;
}

/// [`ExecSource`] over the Pods this agent runs and a [`Tart`] driver.
pub struct GuestExec<T> {
    pods: Arc<dyn PodSource>,
    naming: VmNaming,
    tart: Arc<T>,
}

impl<T: Tart> GuestExec<T> {
    /// Execs into the VMs `naming` gives the Pods `pods` lists.
    pub fn new(pods: Arc<dyn PodSource>, naming: VmNaming, tart: Arc<T>) -> Self {
        Self { pods, naming, tart }
    }
}

fn find_pod<'a>(
    pods: &'a [Pod],
    namespace: &str,
    name: &str,
    uid: Option<&str>,
) -> Result<&'a Pod, ExecError> {
    pods.iter()
        .find(|p| {
            p.namespace().as_deref() == Some(namespace)
                && p.name_any() == name
                && uid.is_none_or(|u| p.uid().as_deref() == Some(u))
        })
        .ok_or(ExecError::PodNotFound)
}

/// PURE: the IP of a running Pod among `pods`.
///
/// # Errors
/// [`ExecError::PodNotFound`], or [`ExecError::NotRunning`] (container `""`) without a
/// running phase or an IP.
pub fn find_ip(
    pods: &[Pod],
    namespace: &str,
    name: &str,
    uid: Option<&str>,
) -> Result<IpAddr, ExecError> {
    let pod = find_pod(pods, namespace, name, uid)?;
    let status = pod.status.as_ref();
    let phase = status
        .and_then(|s| s.phase.clone())
        .unwrap_or_else(|| "Pending".into());
    let ip = status
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

/// PURE: the VM of `target` among `pods`, or kubelet's refusal.
pub fn find_vm(pods: &[Pod], naming: &VmNaming, target: &ExecTarget) -> Result<VmName, ExecError> {
    let pod = find_pod(pods, &target.namespace, &target.pod, target.uid.as_deref())?;
    let has = pod
        .spec
        .as_ref()
        .is_some_and(|s| s.containers.iter().any(|c| c.name == target.container));
    if !has {
        return Err(ExecError::ContainerNotFound(target.container.clone()));
    }
    let status = pod.status.as_ref();
    let phase = status
        .and_then(|s| s.phase.clone())
        .unwrap_or_else(|| "Pending".into());
    let container_running = status
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.name == target.container))
        .is_none_or(|c| c.state.as_ref().is_some_and(|s| s.running.is_some()));
    let not_running = || ExecError::NotRunning {
        container: target.container.clone(),
        pod: target.pod.clone(),
        phase: phase.clone(),
    };
    if phase != "Running" || !container_running || pod.metadata.deletion_timestamp.is_some() {
        return Err(not_running());
    }
    pod.uid()
        .and_then(|uid| naming.vm_name(&uid).ok())
        .ok_or_else(not_running)
}

impl<T: Tart> ExecSource for GuestExec<T> {
    fn running_vm(&self, target: &ExecTarget) -> Result<VmName, ExecError> {
        find_vm(&self.pods.pods(), &self.naming, target)
    }

    fn guest_ip(&self, namespace: &str, pod: &str, uid: Option<&str>) -> Result<IpAddr, ExecError> {
        find_ip(&self.pods.pods(), namespace, pod, uid)
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
        let vm = find_vm(std::slice::from_ref(&pod), &naming, &target(&name, "vm")).unwrap();
        assert_eq!(vm, naming.vm_name(&pod.uid().unwrap()).unwrap());
        let mut t = target(&name, "vm");
        t.uid = Some("00000000-0000-0000-0000-00000000beef".into());
        assert_eq!(find_vm(&[pod], &naming, &t), Err(ExecError::PodNotFound));
    }

    #[test]
    fn port_forward_needs_a_running_pod_with_an_ip() {
        let mut pod = running(test_pod().build());
        let (ns, name) = (pod.namespace().unwrap(), pod.name_any());
        let e = find_ip(std::slice::from_ref(&pod), &ns, &name, None).unwrap_err();
        assert_eq!(e.status(), 400, "no IP yet");
        pod.status.as_mut().unwrap().pod_ip = Some("127.64.0.9".into());
        assert_eq!(
            find_ip(std::slice::from_ref(&pod), &ns, &name, None),
            Ok("127.64.0.9".parse().unwrap())
        );
        let e = find_ip(&[pod], &ns, "other", None).unwrap_err();
        assert_eq!(e, ExecError::PodNotFound);
    }

    #[test]
    fn missing_pods_containers_and_stopped_vms_get_kubelets_answers() {
        let naming = VmNaming::new("tkl-").unwrap();
        let pending = test_pod().build();
        let name = pending.name_any();
        let e = find_vm(
            std::slice::from_ref(&pending),
            &naming,
            &target("other", "vm"),
        )
        .unwrap_err();
        assert_eq!(
            (e.status(), e.to_string()),
            (404, "pod does not exist".into())
        );
        let e = find_vm(&[running(pending.clone())], &naming, &target(&name, "db")).unwrap_err();
        assert_eq!(
            (e.status(), e.to_string()),
            (404, "container not found (\"db\")".into())
        );
        let e = find_vm(&[pending], &naming, &target(&name, "vm")).unwrap_err();
        assert_eq!(e.status(), 400);
        assert!(
            e.to_string()
                .starts_with("container not found (\"vm\"): pod")
                && e.to_string().ends_with("is not running (phase Pending)"),
            "{e}"
        );
    }
}
