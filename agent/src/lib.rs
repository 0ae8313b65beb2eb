//! tart-kubelet: a virtual kubelet that registers an Apple-silicon Mac as a Kubernetes Node and
//! runs every Pod bound to it as a Tart macOS VM.
//!
//! Node side (`node`, `slots`, `host`, `admin`, `metrics`): registration,
//! Lease heartbeat, status and conditions, VM slots, the admin endpoint. Pod side (`pods`):
//! one VM per Pod, with what runs inside it on kubelet's behalf as siblings — `lifecycle`
//! (probes and hooks), `container_logs`, `guest_contract` (env, volumes, tokens). Shipping ([`ship`], `macos`): launchd and macOS host facts. `entry` wires
//! them together; [`cli_main`] is the process entry point. docs/architecture.md has the map.

// Only the process entry point, the RBAC table (which the tests hold against the shipped
// manifest), the API-server client builder (`kube_client`, which the test harness uses too),
// the default VM-name prefix (which the sandbox counts VMs by) and, with the `fuzzing`
// feature, the fuzz targets (which the workspace's `fuzz` crate drives) are used from outside
// the crate; everything else is the crate's own.
mod admin;
mod any_server_cert;
mod api;
mod backoff;
mod cli;
mod config;
mod container_logs;
mod credentials;
mod entry;
mod errors;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzz;
mod guest_contract;
mod guest_file;
mod host;
mod hostcheck;
mod images;
pub mod kube_client;
mod kubelet_api;
mod lifecycle;
mod macos;
mod metrics;
mod node;
mod pods;
mod quantity;
pub mod ship;
mod slots;
mod start_images;
mod telemetry;
mod vitals;
mod vm_name;

pub use entry::cli_main;
pub use vm_name::DEFAULT_PREFIX as VM_NAME_PREFIX;
