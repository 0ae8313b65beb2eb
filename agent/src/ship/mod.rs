//! Shipping the agent to a Mac mini: the `install`, `uninstall` and `doctor`
//! subcommands.
//!
//! Wiring only. The subcommands' clap `Args` live in [`args`]; the top-level CLI
//! (the `cli` module) dispatches to the entry points re-exported here. The decisions (plist text,
//! the launchctl plan, doctor verdicts) are pure functions in the sibling files; I/O (writing
//! the plist, running `launchctl`, probing the host and the API server) stays in the `*_io`
//! parts.

pub(crate) mod args;
pub(crate) mod doctor;
pub(crate) mod install;
pub(crate) mod launchctl;
pub(crate) mod plist;
pub mod rbac;

pub(crate) use args::{DoctorArgs, InstallArgs, UninstallArgs, effective_config};
pub(crate) use doctor::{doctor, smoke::smoke};
pub(crate) use install::{install, uninstall};
pub(crate) use plist::Variant;
