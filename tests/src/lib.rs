//! Test support: the real control plane harness ([`cluster`]) and `fake-tart` homes with their
//! failure knobs ([`fake`]).
pub mod abuse;
pub mod agent;
pub mod citations;
pub mod cluster;
pub mod fake;
pub mod logbench;
pub mod proc_stat;
pub mod sandbox;
