//! Pod resources -> `tart set` options.
//!
//! For each of cpu, memory and ephemeral-storage the container's *limit* wins, else its
//! *request*, else the image's own value is kept (the option is left out of `tart set`).
//! Rounding is always **up**, so a VM never gets less than the Pod asked for:
//! - cpu: millicores rounded up to whole cores (`500m` -> 1, `1500m` -> 2), at least 1;
//! - memory: bytes rounded up to whole MiB (`--memory` is MiB, docs/reference/tart-cli.md §2.3);
//! - ephemeral-storage: bytes rounded up to whole GB of 10⁹ bytes (`--disk-size`,
//!   docs/reference/tart-cli.md §2.3).
//!
//! Quantities are parsed by [`crate::quantity`] (k8s-openapi keeps them as strings). Pure;
//! no I/O.

use std::collections::BTreeMap;

use k8s_openapi::{api::core::v1::Container, apimachinery::pkg::api::resource::Quantity};

use crate::quantity::parse_scaled;

const MIB: u128 = 1 << 20;
const GB: u128 = 1_000_000_000;

/// What the VM should get. `None` keeps the image's value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct VmResources {
    /// Whole CPU cores.
    pub cpu: Option<u16>,
    pub memory_mib: Option<u64>,
    /// Disk in GB (10⁹ bytes).
    pub disk_gb: Option<u16>,
}

/// The resources in raw units, for admission against the host.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct RawResources {
    /// Millicores.
    pub cpu_millis: Option<u64>,
    pub memory_bytes: Option<u64>,
    pub disk_bytes: Option<u64>,
}

/// A quantity that could not be parsed or does not fit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("resource {resource} has an invalid quantity {value:?}")]
pub(crate) struct QuantityError {
    /// `cpu`, `memory` or `ephemeral-storage`.
    pub resource: &'static str,
    /// The quantity text.
    pub value: String,
}

/// Limits else requests of one container, in raw units.
///
/// # Errors
/// [`QuantityError`] for a quantity that is not a Kubernetes quantity.
pub(crate) fn raw_resources(c: &Container) -> Result<RawResources, QuantityError> {
    let r = c.resources.as_ref();
    let limits: Option<&BTreeMap<String, Quantity>> = r.and_then(|r| r.limits.as_ref());
    let requests: Option<&BTreeMap<String, Quantity>> = r.and_then(|r| r.requests.as_ref());
    let pick = |name: &'static str| -> Option<&Quantity> {
        limits
            .and_then(|m| m.get(name))
            .or_else(|| requests.and_then(|m| m.get(name)))
    };
    let parse = |name: &'static str, scale: u128| -> Result<Option<u64>, QuantityError> {
        pick(name)
            .map(|q| {
                parse_scaled(&q.0, scale)
                    .and_then(|v| u64::try_from(v).ok())
                    .ok_or_else(|| QuantityError {
                        resource: name,
                        value: q.0.clone(),
                    })
            })
            .transpose()
    };
    Ok(RawResources {
        cpu_millis: parse("cpu", 1000)?,
        memory_bytes: parse("memory", 1)?,
        disk_bytes: parse("ephemeral-storage", 1)?,
    })
}

impl RawResources {
    /// Converted to `tart set` units, rounding up (see the module docs).
    pub(crate) fn to_vm(self) -> VmResources {
        let up = |v: u64, unit: u128| u128::from(v).div_ceil(unit);
        VmResources {
            cpu: self.cpu_millis.map(|m| clamp_u16(up(m, 1000).max(1))),
            memory_mib: self
                .memory_bytes
                .map(|b| u64::try_from(up(b, MIB).max(1)).unwrap_or(u64::MAX)),
            disk_gb: self.disk_bytes.map(|b| clamp_u16(up(b, GB).max(1))),
        }
    }
}

fn clamp_u16(v: u128) -> u16 {
    u16::try_from(v).unwrap_or(u16::MAX)
}

#[cfg(test)]
mod tests;
