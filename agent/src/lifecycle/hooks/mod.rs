//! Lifecycle hooks (`postStart`, `preStop`) with kubelet's semantics, for the one container of
//! a VM Pod.
//!
//! Wiring and re-exports only. Pure: [`model`] (the hook read from the container, and
//! kubelet's failure texts). I/O: [`run`] (one hook run against the guest: `exec` through
//! `tart exec`, `httpGet` from the Mac to the guest with the probes' HTTP client, `sleep`). The
//! Pod's worker decides when a hook runs and what its failure does (docs/pods.md, "Lifecycle
//! hooks").

pub(crate) mod model;
pub(crate) mod run;

pub(crate) use model::{HookKind, hook};
pub(crate) use run::{HookRunner, run};
