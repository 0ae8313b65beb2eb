//! Pre-pull: images operators declare, pulled before any Pod needs them, paced fleet-wide with
//! Lease tokens.

pub(crate) mod declaration;
pub(crate) mod pacer;
pub(crate) mod progress;
pub(crate) mod runner;
pub(crate) mod tokens;
pub(crate) mod watched;
