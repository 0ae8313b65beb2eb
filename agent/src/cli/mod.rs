//! The command line: `run` (the default) and the shipping subcommands. It ties the agent's
//! options ([`crate::config::RunArgs`]) to the subcommands' own ([`crate::ship`]), so it sits
//! above both.

use clap::{Parser, Subcommand};

use crate::{
    config::RunArgs,
    ship::{DoctorArgs, InstallArgs, UninstallArgs},
};

/// `--version`: the package version and the commit it was built from (`unknown` outside a git
/// checkout; see `agent/build.rs`).
pub(crate) const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("TART_KUBELET_COMMIT"),
    ")"
);

/// tart-kubelet: registers this Mac as a Kubernetes Node and runs every Pod bound to it as a
/// Tart macOS VM.
///
/// With no subcommand it runs the agent (same as `tart-kubelet run`). Every option of `run` can
/// also be set with a `TART_KUBELET_<OPTION>` environment variable or in the TOML file given
/// with `--config` (keys are the option names with `_` for `-`). Flags win over environment,
/// environment over the file.
#[derive(Parser, Debug)]
#[command(name = "tart-kubelet", version = VERSION)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Option<Command>,
    /// Options of the default `run` subcommand.
    #[command(flatten)]
    pub(crate) run: RunArgs,
}

#[derive(Subcommand, Debug)]
pub(crate) enum Command {
    /// Run the agent (the default).
    Run(Box<RunArgs>),
    /// Install the agent as a launchd job.
    Install(InstallArgs),
    /// Remove the launchd job.
    Uninstall(UninstallArgs),
    /// Check that this host can run the agent.
    Doctor(DoctorArgs),
}

#[cfg(test)]
mod tests;
