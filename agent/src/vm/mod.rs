//! VM side: deterministic names ([`naming`]), the per-Pod worker that owns a VM
//! ([`supervisor`]), and restart recovery plus orphan garbage collection ([`gc`]).
pub mod gc;
pub mod naming;
pub mod supervisor;
