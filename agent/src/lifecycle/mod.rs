//! What the agent does inside a running container on kubelet's behalf: probes (kubelet's
//! `prober`) and lifecycle hooks (kubelet's `lifecycle`), which act through the same handlers.
//!
//! Wiring only. [`handlers`]: one implementation of each handler — `exec` through `tart exec`,
//! `httpGet` and `tcpSocket` from the Mac to the guest — each ending in a typed result that a
//! probe and a hook read by their own rules. [`probes`]: readiness, liveness and startup
//! probes. [`hooks`]: `postStart` and `preStop`. Nothing here knows the Pod object beyond its
//! container: the Pod's worker (`pods::worker`) decides when they run and what their results do.

pub(crate) mod handlers;
pub(crate) mod hooks;
pub(crate) mod probes;
