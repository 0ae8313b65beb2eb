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
pub(crate) struct GuestExec<T> {
    pods: ServedPods,
    naming: VmNaming,
    tart: Arc<T>,
}

impl<T: Tart> GuestExec<T> {
    /// Execs into the VMs `naming` gives the Pods `pods` serves.
    pub(crate) fn new(pods: ServedPods, naming: VmNaming, tart: Arc<T>) -> Self {
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
pub(crate) fn find_ip(
    pod: Option<&Pod>,
    name: &str,
    uid: Option<&str>,
) -> Result<IpAddr, ExecError> {
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
pub(crate) fn find_vm(
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
mod tests;
