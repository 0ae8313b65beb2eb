//! Command line, environment and TOML file -> one validated [`Config`].
//!
//! Precedence, highest first: command-line flag, `TART_KUBELET_*` environment variable, the
//! TOML file given by `--config`, built-in default. [`RunArgs`] is both the clap argument
//! group and the file schema (every field optional, unknown keys rejected), so a setting has
//! the same name everywhere (`--vm-slots`, `TART_KUBELET_VM_SLOTS`, `vm_slots = 2`).
//!
//! Each value is typed as it is read: clap (flags, environment) and serde (the file) use the
//! same parsers ([`values`], [`units`]), which reject a value that is wrong on its own. Then
//! [`Config::resolve`] fills in the defaults and checks settings against each other; it is
//! pure and unit-tested. Reading the file and the host name are the only I/O here
//! ([`Config::load`], [`HostDefaults::detect`]).

mod args;
mod client_ca;
mod limits;
mod model;
mod profiles;
mod resolve;
pub(crate) mod units;
mod values;

use std::path::Path;

pub(crate) use args::RunArgs;
pub(crate) use client_ca::{ClientCa, client_ca};
pub(crate) use limits::{Limits, STREAMING_IDLE};
pub(crate) use model::{
    Config, ConfigError, HostDefaults, Identity, LauncherMode, LogFormat, PullCredentials,
};
pub(crate) use model::{LABEL_PREFIX, VM_SLOTS_RESOURCE};
pub(crate) use profiles::{VmProfile, VmProfiles};
pub(crate) use units::parse_semver;
pub(crate) use units::{DiskThreshold, TaintSpec};

impl Config {
    /// Merge `args` over the `--config` file (if any) and validate.
    ///
    /// # Errors
    /// [`ConfigError`] naming the first bad setting or the unreadable file.
    pub(crate) fn load(args: RunArgs, host: &HostDefaults) -> Result<Self, ConfigError> {
        let merged = match args.config.clone() {
            Some(path) => args.or(read_file(&path)?),
            None => args,
        };
        Self::resolve(merged, host)
    }
}

fn read_file(path: &Path) -> Result<RunArgs, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::ReadFile {
        path: path.to_owned(),
        source,
    })?;
    toml::from_str(&text).map_err(|source| ConfigError::ParseFile {
        path: path.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests;
