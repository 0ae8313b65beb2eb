//! Admission: can this Pod be a Tart VM on this host at all?
//!
//! Mirrors kubelet admission: a Pod that can never run here is rejected once, with phase
//! `Failed`, a specific reason and message, and a Warning event; the agent carries on. What
//! counts as unsupported: not exactly one container, init or ephemeral containers, a volume the
//! agent cannot give a VM (anything but `emptyDir`, `secret`, `configMap`, `downwardAPI` and
//! `projected` with `secret`, `configMap`, `downwardAPI` or `serviceAccountToken` sources, as
//! [`fields::table::VOLUME`] says), `volumeDevices` (raw block devices), requests beyond the
//! host, an image that is not a remote OCI reference, and an annotation of the agent's
//! (`tart.run/guest-launcher`) whose value it does not know. Fields that are accepted but not
//! honoured are [`fields::ignored_fields`]'s business. Pure; no I/O.

use k8s_openapi::api::core::v1::Pod;

use super::{
    fields,
    image::ImageRef,
    launcher,
    resources::{RawResources, raw_resources},
};
use crate::config::LauncherMode;
use crate::lifecycle::probes::ProbeSet;

/// What the host can give one VM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HostLimits {
    /// Allocatable millicores.
    pub cpu_millis: u64,
    /// Allocatable memory bytes.
    pub memory_bytes: u64,
    /// Allocatable ephemeral storage bytes (`TART_HOME` volume).
    pub disk_bytes: u64,
}

impl HostLimits {
    /// Before our Node's allocatable is known, and for Pods that already have a VM: admit
    /// everything.
    pub(crate) const UNLIMITED: HostLimits = HostLimits {
        cpu_millis: u64::MAX,
        memory_bytes: u64::MAX,
        disk_bytes: u64::MAX,
    };
}

/// Closed set of rejection reasons (metric label and event reason).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum RejectReason {
    /// Not exactly one container.
    ContainerCount,
    /// Init containers present.
    InitContainers,
    /// Ephemeral containers present.
    EphemeralContainers,
    /// A volume the VM cannot mount, or a raw block device (`volumeDevices`).
    Volume,
    /// A quantity that does not parse.
    InvalidResources,
    /// CPU beyond the host.
    OutOfCpu,
    /// Memory beyond the host.
    OutOfMemory,
    /// Disk beyond the host.
    OutOfDisk,
    /// Image is not a remote OCI reference.
    InvalidImage,
    /// A probe the agent cannot run (a `grpc` probe, a named port the container lacks).
    Probe,
    /// An annotation of the agent's with a value it does not know.
    Annotation,
}

impl RejectReason {
    /// Every reason, for pre-registering metric label sets.
    pub(crate) const ALL: [RejectReason; 11] = [
        Self::ContainerCount,
        Self::InitContainers,
        Self::EphemeralContainers,
        Self::Volume,
        Self::InvalidResources,
        Self::OutOfCpu,
        Self::OutOfMemory,
        Self::OutOfDisk,
        Self::InvalidImage,
        Self::Probe,
        Self::Annotation,
    ];

    /// Metric label value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::ContainerCount => "container_count",
            Self::InitContainers => "init_containers",
            Self::EphemeralContainers => "ephemeral_containers",
            Self::Volume => "volume",
            Self::InvalidResources => "invalid_resources",
            Self::OutOfCpu => "out_of_cpu",
            Self::OutOfMemory => "out_of_memory",
            Self::OutOfDisk => "out_of_disk",
            Self::InvalidImage => "invalid_image",
            Self::Probe => "probe",
            Self::Annotation => "annotation",
        }
    }

    /// The Pod `status.reason` (kubelet style: `OutOfcpu`, `OutOfmemory`, ...).
    pub(crate) fn pod_reason(self) -> &'static str {
        match self {
            Self::ContainerCount => "UnsupportedContainerCount",
            Self::InitContainers => "UnsupportedInitContainers",
            Self::EphemeralContainers => "UnsupportedEphemeralContainers",
            Self::Volume => "UnsupportedVolume",
            Self::InvalidResources => "InvalidResources",
            Self::OutOfCpu => "OutOfcpu",
            Self::OutOfMemory => "OutOfmemory",
            Self::OutOfDisk => "OutOfephemeral-storage",
            Self::InvalidImage => "InvalidImageName",
            Self::Probe => "UnsupportedProbe",
            Self::Annotation => "InvalidAnnotation",
        }
    }
}

/// A rejected Pod: reason and a human message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rejection {
    /// Closed reason.
    pub reason: RejectReason,
    /// What is wrong, for `status.message` and the event.
    pub message: String,
}

/// What admission extracted from an accepted Pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Admitted {
    /// The single container's name.
    pub container: String,
    pub image: ImageRef,
    /// Its resources (limits else requests).
    pub resources: RawResources,
}

/// Admit or reject.
///
/// # Errors
/// A [`Rejection`] for a Pod that can never run on this host.
pub(crate) fn admit(pod: &Pod, host: &HostLimits) -> Result<Admitted, Rejection> {
    let reject = |reason, message: String| Rejection { reason, message };
    let Some(spec) = pod.spec.as_ref() else {
        return Err(reject(
            RejectReason::ContainerCount,
            "the Pod has no spec".into(),
        ));
    };
    if spec.containers.len() != 1 {
        return Err(reject(
            RejectReason::ContainerCount,
            format!(
                "a Tart VM Pod must have exactly one container, this one has {}",
                spec.containers.len()
            ),
        ));
    }
    if spec.init_containers.as_ref().is_some_and(|c| !c.is_empty()) {
        return Err(reject(
            RejectReason::InitContainers,
            "init containers are not supported on Tart VM nodes".into(),
        ));
    }
    if spec
        .ephemeral_containers
        .as_ref()
        .is_some_and(|c| !c.is_empty())
    {
        return Err(reject(
            RejectReason::EphemeralContainers,
            "ephemeral containers are not supported on Tart VM nodes".into(),
        ));
    }
    let c = &spec.containers[0];
    if let Some((v, kind)) = spec
        .volumes
        .iter()
        .flatten()
        .find_map(|v| fields::unsupported_volume(v).map(|kind| (v, kind)))
    {
        return Err(reject(
            RejectReason::Volume,
            format!(
                "volume {:?} ({kind}) is not supported: a Tart VM can only have emptyDir, secret, configMap, downwardAPI and projected (secret, configMap, downwardAPI, serviceAccountToken) volumes",
                v.name
            ),
        ));
    }
    if let Some(d) = c.volume_devices.iter().flatten().next() {
        return Err(reject(
            RejectReason::Volume,
            format!(
                "volumeDevices are not supported: a Tart VM cannot attach the raw block volume {:?} at {:?}",
                d.name, d.device_path
            ),
        ));
    }
    let image = ImageRef::parse(c.image.as_deref().unwrap_or_default())
        .map_err(|e| reject(RejectReason::InvalidImage, e.to_string()))?;
    ProbeSet::from_container(c).map_err(|e| reject(RejectReason::Probe, e.to_string()))?;
    // The mode itself is the worker's to apply; here only a value that names none is refused.
    launcher::mode_of(pod, LauncherMode::Auto).map_err(|m| reject(RejectReason::Annotation, m))?;
    let resources =
        raw_resources(c).map_err(|e| reject(RejectReason::InvalidResources, e.to_string()))?;
    let checks = [
        (
            RejectReason::OutOfCpu,
            "cpu",
            resources.cpu_millis,
            host.cpu_millis,
            "m",
        ),
        (
            RejectReason::OutOfMemory,
            "memory",
            resources.memory_bytes,
            host.memory_bytes,
            "",
        ),
        (
            RejectReason::OutOfDisk,
            "ephemeral-storage",
            resources.disk_bytes,
            host.disk_bytes,
            "",
        ),
    ];
    for (reason, name, want, have, unit) in checks {
        if let Some(w) = want.filter(|w| *w > have) {
            return Err(reject(
                reason,
                format!(
                    "Node didn't have enough resource: {name}, requested: {w}{unit}, capacity: {have}{unit}"
                ),
            ));
        }
    }
    Ok(Admitted {
        container: c.name.clone(),
        image,
        resources,
    })
}

#[cfg(test)]
mod tests;
