//! A fuzzing driver that needs nothing but stable Rust: it runs each fuzz target (the
//! `fuzzing` feature's `tart_kubelet::fuzz::targets()`) over its seed corpus and then over
//! mutated and random inputs, each input on a worker thread with a time limit (a hang) and
//! under a counting allocator (the most one input had allocated at once), and reports the
//! inputs run, crashes, hangs and memory. It is not coverage-guided: the mutator works from
//! the seeds, the committed corpus and its own recent outputs.
//!
//! Modules, lowest first: `alloc` (the counting allocator), `rng` (a seeded PRNG, so a run
//! is reproducible from its seed), `mutate`, `corpus` (committed inputs, written findings),
//! `runner` (one target's run). `main.rs` is the command line for long runs;
//! `short_tests.rs` is the short run in CI.

pub mod alloc;
pub mod corpus;
pub mod mutate;
pub mod rng;
pub mod runner;

#[cfg(test)]
mod short_tests;

pub use runner::{Finding, FindingKind, Plan, Report, run};
pub use tart_kubelet::fuzz::{Target, targets};
