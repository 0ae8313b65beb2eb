//! Container logs that outlive the VM: a collector per run turns the guest's mirrored output
//! and `tart run`'s log into CRI log files under the Pod log root (kubelet's layout and
//! rotation), and the reader serves them to `containerLogs` with kubelet's semantics. The
//! files stay until the Pod is deleted ([`remove_pod_logs`]). Starting collectors with each
//! run belongs to the Pod's worker; serving `containerLogs` to the kubelet API belongs to the
//! Pod side's log store (`pods::logs::serve`).

mod checkpoint;
pub mod collector;
pub mod cri;
pub mod error;
pub mod files;
pub mod format;
pub mod reader;
pub mod source;
mod tail;
pub mod writer;

pub use collector::{CollectorHandle, CollectorSpec, FaultReport, Origin, Source, spawn};
pub use error::LogError;
pub use files::{PodLogId, remove_pod_logs};
pub use reader::read;
pub use source::Fault;

#[cfg(test)]
mod bench_tests;
