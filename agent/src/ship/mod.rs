//! Shipping the agent to a Mac mini: the `install`, `uninstall` and `doctor`
//! subcommands and the agent's own rotating log file.
//!
//! Wiring only. The subcommands' clap `Args` live in [`args`]; the top-level CLI
//! (the `cli` module) dispatches to the entry points re-exported here. The decisions (plist text,
//! the launchctl plan, doctor verdicts) are pure functions in the sibling files; I/O (writing
//! the plist, running `launchctl`, probing the host and the API server) stays in the `*_io`
//! parts.

pub mod args;
pub mod doctor;
pub mod install;
pub mod launchctl;
pub mod logfile;
pub mod plist;
pub mod rbac;

pub use args::{DoctorArgs, InstallArgs, JobControl, UninstallArgs, effective_config};
pub use doctor::doctor;
pub use install::{install, uninstall};
pub use plist::Variant;
