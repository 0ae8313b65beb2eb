//! Pre-pull: images operators declare, pulled before any Pod needs them, paced fleet-wide with
//! Lease tokens.

pub mod declaration;
pub mod pacer;
pub mod runner;
pub mod tokens;
