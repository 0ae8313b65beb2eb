//! tart-kubelet: a virtual kubelet that registers an Apple-silicon Mac as a Kubernetes Node and
//! runs every Pod bound to it as a Tart macOS VM.
//!
//! Node side (this crate's [`node`], [`slots`], [`host`], [`admin`], [`metrics`]): registration,
//! Lease heartbeat, status and conditions, VM slots, the admin endpoint. Pod side ([`pods`]):
//! one VM per Pod. Shipping ([`ship`], [`macos`]): launchd and macOS host facts.
//! [`entry`] wires them together; [`cli_main`] is the process entry point.

pub mod admin;
pub mod api;
pub mod backoff;
pub mod cli;
pub mod config;
pub mod entry;
pub mod host;
pub mod macos;
pub mod metrics;
pub mod node;
pub mod pods;
pub mod quantity;
pub mod ship;
pub mod slots;
pub mod telemetry;

pub use entry::{cli_main, run};
