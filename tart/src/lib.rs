//! Typed driver for the [Tart](https://tart.run) CLI.
//!
//! Owns everything about talking to `tart`: argv building (`command.rs`), output parsing
//! (`parse.rs`), error classification from exit code *and* stderr (`error.rs`), per-operation
//! deadlines with process-group kill ([`process`]), bounded kill-and-retry ([`RetryPolicy`]),
//! the pull stall watchdog, detached `tart run` processes that outlive the agent ([`run`]) and
//! the graceful stop sequence (`stop.rs`). The agent holds the [`Tart`] trait; [`TartCli`] is
//! its implementation over a real program.
//!
//! It knows nothing of Kubernetes or metrics: callers count attempts through an [`Observer`].
//! The behaviour it encodes is written from docs/reference/tart-cli.md (the facts of the real
//! CLI), which comments cite by section.
//!
//! This file only wires the modules together. Their order, lowest first: `model`, `error`,
//! `observe`, `deadlines`, `signal` (pure data and primitives); `command`, `parse`, `retry`
//! (pure decisions); `inflight`, `process`, `exec`, `running`, `run`, `stop` (processes); `driver`
//! (the trait); `cli`, `testing` (its implementations); `fuzz` (the parsers' fuzz targets, feature
//! `fuzzing`). Each refers only to modules listed before it.
#![warn(missing_docs)]

pub mod cache;
mod cli;
mod command;
mod deadlines;
mod driver;
mod error;
mod exec;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzz;
pub mod inflight;
mod model;
mod observe;
mod parse;
pub mod process;
mod retry;
pub mod run;
mod running;
mod signal;
mod stop;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use cli::{TartCli, builder::TartCliBuilder};
pub use deadlines::{Deadlines, SizeDeadline};
pub use driver::Tart;
pub use error::{Error, ErrorKind, Result};
pub use exec::{ExecControl, ExecOpts, ExecReader, ExecSession, ExecWait, ExecWriter, WindowSize};
pub use model::{
    Credentials, DirShare, DiskCaching, DiskSync, ExecOutput, ExitInfo, ExitReason, IpResolver,
    Network, Op, PruneOpts, RootDiskOpts, RunOpts, SetOpts, Source, StopOutcome, Version,
    VmDetails, VmInfo, VmName, VmState,
};
pub use observe::{Attempt, AttemptOutcome, Observer};
pub use retry::RetryPolicy;
pub use running::{RunningVm, VmProcess};
