//! Container logs that outlive the VM: a collector per run turns the guest's mirrored output
//! and `tart run`'s log into CRI log files under the Pod log root (kubelet's layout and
//! rotation), and the reader serves them to `containerLogs` with kubelet's semantics. The
//! files stay until the Pod is deleted ([`remove_pod_logs`]). Starting collectors with each
//! run belongs to the Pod's worker; serving `containerLogs` to the kubelet API belongs to the
//! Pod side's log store (`pods::logs::serve`).

mod checkpoint;
pub(crate) mod collector;
pub(crate) mod cri;
pub(crate) mod error;
pub(crate) mod files;
pub(crate) mod format;
pub(crate) mod reader;
pub(crate) mod source;
mod tail;
pub(crate) mod wake;
pub(crate) mod writer;

pub(crate) use collector::{CollectorHandle, CollectorSpec, FaultReport, Origin, Source, spawn};
pub(crate) use error::LogError;
pub(crate) use files::{PodLogId, remove_pod_logs};
pub(crate) use reader::read;
pub(crate) use source::Fault;
pub(crate) use wake::LogWatch;

#[cfg(test)]
mod bench_tests;
#[cfg(test)]
mod testing;
