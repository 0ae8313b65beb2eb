//! VM side: names, the per-VM supervisor and garbage collection.
pub mod naming;
