//! PURE: host facts + tart health + configuration -> the desired `NodeStatus`.
//!
//! The desired status is always built from our own snapshot, never from what the API server
//! holds, so a controller-set `Ready=Unknown` is never copied back. `lastTransitionTime` is kept
//! from `previous` when a condition's status did not change; `lastHeartbeatTime` is `now`.
//! `Ready` is the last condition (kubelet convention, kubernetes#16961). A failing host check
//! or a quarantine sets `TartReady=False` but leaves `Ready=True` (see [`super::gate`]).

use std::collections::BTreeMap;

use crate::images::prepull::{
    progress::{CONDITION as PREPULL_CONDITION, summary as prepull_summary},
    runner::Progress,
};
use k8s_openapi::{
    api::core::v1::{
        ContainerImage, DaemonEndpoint, NodeAddress, NodeCondition, NodeDaemonEndpoints,
        NodeStatus, NodeSystemInfo,
    },
    apimachinery::pkg::{api::resource::Quantity, apis::meta::v1::Time},
};

use super::{
    gate::block,
    health::{HealthSnapshot, TartProbe},
};
use crate::{config::Config, config::VM_SLOTS_RESOURCE, host::HostFacts};

/// `kubeletVersion`: the agent's own version, not a Kubernetes release's, as a semantic version
/// with a `v` and a pre-release tag naming the agent (`v0.1.0-tart-kubelet`), which
/// Kubernetes' version parsers and `kubectl get nodes` take as they are.
pub(crate) fn kubelet_version() -> String {
    format!("v{}-tart-kubelet", env!("CARGO_PKG_VERSION"))
}

/// Everything the status depends on.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StatusInput<'a> {
    /// Configuration (thresholds, overrides, slots).
    pub cfg: &'a Config,
    /// Host snapshot.
    pub facts: &'a HostFacts,
    /// Tart probe and host faults.
    pub health: &'a HealthSnapshot,
    /// The node's `InternalIP`.
    pub internal_ip: &'a str,
    /// Conditions we last wrote (or the server's at start-up), for transition times.
    pub previous: &'a [NodeCondition],
    pub now: &'a Time,
    /// The images this Mac holds (`status.images`), once measured.
    pub images: Option<&'a [ContainerImage]>,
    /// Where the images declared for pre-pull stand, once the declaration was read.
    pub prepull: Option<&'a Progress>,
}

/// One condition's decision.
struct Cond {
    type_: &'static str,
    status: bool,
    reason: &'static str,
    message: String,
}

/// The desired `NodeStatus`.
pub(crate) fn desired_status(i: StatusInput<'_>) -> NodeStatus {
    let (capacity, allocatable) = resources(i.cfg, i.facts);
    let (tart_ready, tart_usable) = tart_condition(i.health);
    let mut conds = vec![
        memory_condition(i.cfg, i.facts),
        disk_condition(i.cfg, i.facts),
        pid_condition(i.facts),
    ];
    // A blocked host (failing check, quarantine) keeps `Ready=True`: only tart itself being
    // unusable makes the Node not ready (see `gate` for why).
    let ready = if tart_usable {
        Cond {
            type_: "Ready",
            status: true,
            reason: "KubeletReady",
            message: "kubelet is posting ready status".into(),
        }
    } else {
        Cond {
            type_: "Ready",
            status: false,
            reason: "KubeletNotReady",
            message: format!(
                "tart is not usable: {}: {}",
                tart_ready.reason, tart_ready.message
            ),
        }
    };
    conds.push(tart_ready);
    conds.push(ready);
    if let Some(p) = i.prepull {
        let (status, reason, message) = prepull_summary(p);
        conds.push(Cond {
            type_: PREPULL_CONDITION,
            status,
            reason,
            message,
        });
    }

    let tart_version = i.health.probe.version().unwrap_or("unknown");
    NodeStatus {
        capacity: Some(capacity),
        allocatable: Some(allocatable),
        conditions: Some(
            conds
                .into_iter()
                .map(|c| to_condition(c, i.previous, i.now))
                .collect(),
        ),
        addresses: Some(vec![NodeAddress {
            type_: "InternalIP".into(),
            address: i.internal_ip.into(),
        }]),
        daemon_endpoints: Some(NodeDaemonEndpoints {
            kubelet_endpoint: Some(DaemonEndpoint {
                port: i32::from(i.cfg.kubelet_port),
            }),
        }),
        node_info: Some(NodeSystemInfo {
            architecture: "arm64".into(),
            operating_system: "darwin".into(),
            os_image: i.facts.os_image.clone(),
            kernel_version: i.facts.kernel_version.clone(),
            kubelet_version: kubelet_version(),
            container_runtime_version: format!("tart://{tart_version}"),
            machine_id: i.facts.machine_id.clone(),
            system_uuid: i.facts.machine_id.clone(),
            boot_id: i.facts.boot_id.clone(),
            ..NodeSystemInfo::default()
        }),
        images: i.images.map(<[ContainerImage]>::to_vec),
        ..NodeStatus::default()
    }
}

/// The status of condition `type_` in `status`, if present.
pub(crate) fn condition_status<'a>(status: &'a NodeStatus, type_: &str) -> Option<&'a str> {
    status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == type_)
        .map(|c| c.status.as_str())
}

fn to_condition(c: Cond, previous: &[NodeCondition], now: &Time) -> NodeCondition {
    let status = if c.status { "True" } else { "False" };
    let transition = previous
        .iter()
        .find(|p| p.type_ == c.type_ && p.status == status)
        .and_then(|p| p.last_transition_time.clone())
        .unwrap_or_else(|| now.clone());
    NodeCondition {
        type_: c.type_.into(),
        status: status.into(),
        reason: Some(c.reason.into()),
        message: Some(c.message),
        last_heartbeat_time: Some(now.clone()),
        last_transition_time: Some(transition),
    }
}

fn resources(
    cfg: &Config,
    f: &HostFacts,
) -> (BTreeMap<String, Quantity>, BTreeMap<String, Quantity>) {
    let cpu = cfg.cpu_override.unwrap_or(f.cpus);
    let mem = cfg.memory_override_bytes.unwrap_or(f.memory_bytes);
    let storage = cfg
        .storage_override_bytes
        .or(f.tart_home_volume.map(|v| v.total_bytes))
        .unwrap_or(0);
    let q = |s: String| Quantity(s);
    let ki = |b: u64| q(format!("{}Ki", b / 1024));
    let mut cap = BTreeMap::new();
    cap.insert("cpu".into(), q(cpu.to_string()));
    cap.insert("memory".into(), ki(mem));
    cap.insert("ephemeral-storage".into(), ki(storage));
    cap.insert("pods".into(), q(cfg.max_pods.to_string()));
    cap.insert(VM_SLOTS_RESOURCE.into(), q(cfg.vm_slots.to_string()));
    let mut alloc = cap.clone();
    alloc.insert(
        "memory".into(),
        ki(mem.saturating_sub(cfg.memory_reserve_bytes)),
    );
    (cap, alloc)
}

fn memory_condition(cfg: &Config, f: &HostFacts) -> Cond {
    let pressure = f
        .memory_available_bytes
        .is_some_and(|a| a < cfg.memory_pressure_bytes);
    if pressure {
        Cond {
            type_: "MemoryPressure",
            status: true,
            reason: "KubeletHasInsufficientMemory",
            message: "kubelet has insufficient memory available".into(),
        }
    } else {
        Cond {
            type_: "MemoryPressure",
            status: false,
            reason: "KubeletHasSufficientMemory",
            message: "kubelet has sufficient memory available".into(),
        }
    }
}

fn disk_condition(cfg: &Config, f: &HostFacts) -> Cond {
    let pressure = f
        .tart_home_volume
        .is_some_and(|v| v.free_bytes < cfg.disk_pressure.min_free(v.total_bytes));
    if pressure {
        Cond {
            type_: "DiskPressure",
            status: true,
            reason: "KubeletHasDiskPressure",
            message: "kubelet has disk pressure".into(),
        }
    } else {
        Cond {
            type_: "DiskPressure",
            status: false,
            reason: "KubeletHasNoDiskPressure",
            message: "kubelet has no disk pressure".into(),
        }
    }
}

fn pid_condition(f: &HostFacts) -> Cond {
    // Kubelet's default pid eviction threshold is 10 % available.
    let pressure = f.pids.is_some_and(|p| p.max > 0 && p.used * 10 > p.max * 9);
    if pressure {
        Cond {
            type_: "PIDPressure",
            status: true,
            reason: "KubeletHasInsufficientPID",
            message: "kubelet has insufficient PID available".into(),
        }
    } else {
        Cond {
            type_: "PIDPressure",
            status: false,
            reason: "KubeletHasSufficientPID",
            message: "kubelet has sufficient PID available".into(),
        }
    }
}

/// `TartReady`, and whether tart itself is usable (a blocked host still is).
fn tart_condition(h: &HealthSnapshot) -> (Cond, bool) {
    let not_ready = |reason, message| Cond {
        type_: "TartReady",
        status: false,
        reason,
        message,
    };
    let unusable = |reason, message| (not_ready(reason, message), false);
    match &h.probe {
        TartProbe::Unknown => unusable("TartNotProbed", "tart has not been probed yet".into()),
        TartProbe::NotFound { message } => {
            unusable("TartNotFound", format!("tart cannot be started: {message}"))
        }
        TartProbe::VersionUnsupported { version, minimum } => unusable(
            "TartVersionUnsupported",
            format!("tart {version} is older than the supported minimum {minimum}"),
        ),
        TartProbe::Failing { message } => unusable(
            "TartNotWorking",
            format!("tart --version failed: {message}"),
        ),
        TartProbe::HomeNotWritable { message } => unusable(
            "TartHomeNotWritable",
            format!("TART_HOME is not writable: {message}"),
        ),
        TartProbe::Ok { version } => match block(h) {
            Some(b) => (not_ready(b.reason, b.message), true),
            None => (
                Cond {
                    type_: "TartReady",
                    status: true,
                    reason: "TartReady",
                    message: format!("tart {version} is usable"),
                },
                true,
            ),
        },
    }
}

#[cfg(test)]
mod tests;
