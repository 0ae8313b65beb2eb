//! The vitals as the kubelet API's `/stats/summary` and `/metrics/resource` see them: each
//! bound Pod's VM as one container, the host as the node. The node's CPU is the host's own
//! counter where the platform has one (`/proc/stat`), else the sum over the VMs. And the
//! sampler's own seam: which VMs it samples.

use std::{borrow::Borrow, sync::Arc};

use k8s_openapi::{api::core::v1::Pod, jiff::Timestamp};

use crate::kubelet_api::{
    PodSource,
    stats::{PodUsage, StatsSource, StatsView, Usage},
};
use crate::vitals::{Vitals, model::Snapshot, sampler::WantedVms};
use crate::vm_name::VmNaming;

/// A [`StatsSource`] over the sampler's snapshot and the Pods bound here.
pub(crate) struct VitalsStats {
    pub vitals: Vitals,
    pub pods: Arc<dyn PodSource>,
    pub naming: VmNaming,
    pub node_name: String,
    pub started: Timestamp,
}

impl StatsSource for VitalsStats {
    fn stats(&self) -> StatsView {
        view(
            &self.vitals.snapshot(),
            &self.pods.pods(),
            &self.naming,
            &self.node_name,
            self.started,
        )
    }
}

/// The vitals sampler's seam: the VMs of the Pods bound here, running or not (an exited VM's
/// samples explain its death while its Pod is bound).
pub(crate) fn wanted(pods: Arc<dyn PodSource>, naming: VmNaming) -> WantedVms {
    Arc::new(move || {
        pods.pods()
            .iter()
            .filter_map(|p| p.metadata.uid.as_deref())
            .filter_map(|uid| naming.vm_name(uid).ok())
            .map(|vm| vm.to_string())
            .collect()
    })
}

/// PURE: the view of `snap` for `pods`. Only VMs sampled at the newest tick count as running.
pub(crate) fn view(
    snap: &Snapshot,
    pods: &[impl Borrow<Pod>],
    naming: &VmNaming,
    node_name: &str,
    started: Timestamp,
) -> StatsView {
    let tick = snap.host.last().and_then(|h| h.at);
    let mut out = Vec::new();
    for p in pods {
        let p = p.borrow();
        let Some(uid) = p.metadata.uid.as_deref() else {
            continue;
        };
        let Ok(vm) = naming.vm_name(uid) else {
            continue;
        };
        let Some(v) = snap.vms.get(vm.as_str()) else {
            continue;
        };
        let Some(s) = v.host.last().filter(|s| Some(s.at) == tick) else {
            continue;
        };
        let c = p.spec.as_ref().and_then(|s| s.containers.first());
        let memory_limit_bytes = c
            .and_then(|c| crate::pods::resources::raw_resources(c).ok())
            .and_then(|r| r.to_vm().memory_mib)
            .map(|mib| mib << 20);
        out.push(PodUsage {
            namespace: p.metadata.namespace.clone().unwrap_or_default(),
            name: p.metadata.name.clone().unwrap_or_default(),
            uid: uid.to_owned(),
            container: c.map(|c| c.name.clone()).unwrap_or_default(),
            image: c.and_then(|c| c.image.clone()).unwrap_or_default(),
            vm: vm.to_string(),
            memory_limit_bytes,
            start: v.first_seen.unwrap_or(s.at),
            usage: Usage {
                at: s.at,
                cpu_seconds_total: s.cpu_seconds_total,
                cpu_cores: s.cpu_cores,
                working_set_bytes: s.rss_bytes,
            },
        });
    }
    let node = snap.host.last().and_then(|h| {
        let at = h.at?;
        let vm_cpu: f64 = out.iter().map(|p| p.usage.cpu_seconds_total).sum();
        let vm_mem: u64 = out.iter().map(|p| p.usage.working_set_bytes).sum();
        let cpu_total = h.cpu_seconds_total.unwrap_or(vm_cpu);
        let prev = snap.host.iter().rev().nth(1);
        let cpu_cores = match (
            h.cpu_seconds_total,
            prev.and_then(|p| Some((p.at?, p.cpu_seconds_total?))),
        ) {
            (Some(now), Some((then_at, then))) => {
                let dt = (at.as_millisecond() - then_at.as_millisecond()) as f64 / 1000.0;
                (dt > 0.0).then(|| ((now - then) / dt).max(0.0))
            }
            (None, _) => Some(out.iter().filter_map(|p| p.usage.cpu_cores).sum()),
            _ => None,
        };
        Some(Usage {
            at,
            cpu_seconds_total: cpu_total,
            cpu_cores,
            working_set_bytes: h.memory_used_bytes.unwrap_or(vm_mem),
        })
    });
    StatsView {
        node_name: node_name.to_owned(),
        node_start: started,
        node,
        pods: out,
    }
}

#[cfg(test)]
mod tests;
