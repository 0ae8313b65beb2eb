//! Readiness, liveness and startup probes with kubelet's semantics, for one container run (one
//! VM run).
//!
//! Wiring and re-exports only. Pure: [`model`] (the probes read from the container, defaults
//! and validation), [`state`] (thresholds, gating, `started`/`ready`, kill decisions). I/O:
//! [`check`] (one attempt, and [`GuestChecker`], which runs it with the handlers hooks share,
//! [`crate::lifecycle::handlers`]), [`prober`] (the task that runs the attempts on time). The Pod's worker spawns a
//! prober when the VM runs, drops it when the VM exits, turns its status into the Pod's
//! conditions, its kill into a stop, and its reports into events and metrics. docs/probes.md
//! describes the behaviour and where it differs from kubelet.

pub(crate) mod check;
pub(crate) mod model;
pub(crate) mod prober;
pub(crate) mod state;

#[cfg(test)]
pub(crate) mod fixtures;

pub(crate) use super::handlers::outcome::{Outcome, ProbeResult};
pub(crate) use check::GuestChecker;
pub(crate) use model::{ProbeKind, ProbeSet};
pub(crate) use prober::{
    EventReason, Kill, ProbeReport, ProberEvent, ProberHandle, event_message, event_reason, spawn,
};
pub(crate) use state::ProbeStatus;
