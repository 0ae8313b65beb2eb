//! Where the host-check facts come from: the macOS commands (see `macos.rs`), or on any OS a
//! small file (`--host-checks-file`) that stands in for them, so tests on Linux can take the
//! GUI session away, lock the keychain or fill the lease table while the agent runs. Every
//! gathering has a deadline; a fact that does not arrive in time is left unchecked.

use std::{path::PathBuf, time::Duration};

use super::Observed;

/// The configured source of host-check facts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    /// Nothing to check (not macOS, no stand-in file).
    None,
    /// The stand-in file, read afresh every round (absent = nothing checked).
    File(PathBuf),
    /// The macOS commands; softnet only when a program is configured.
    #[cfg_attr(not(target_os = "macos"), allow(dead_code))]
    MacOs {
        /// The softnet program to check, if the agent is configured to use one.
        softnet: Option<PathBuf>,
    },
}

impl Source {
    /// The stand-in file when given, else the macOS commands on macOS, else nothing.
    pub(crate) fn new(file: Option<PathBuf>, softnet: Option<PathBuf>) -> Self {
        match file {
            Some(f) => Source::File(f),
            None if cfg!(target_os = "macos") => Source::MacOs { softnet },
            None => Source::None,
        }
    }

    /// One round of facts, within `deadline` (per command).
    pub(crate) async fn observe(&self, deadline: Duration) -> Observed {
        match self {
            Source::None => Observed::default(),
            Source::File(path) => {
                match tokio::time::timeout(deadline, tokio::fs::read_to_string(path)).await {
                    Ok(Ok(text)) => parse_file(&text),
                    _ => Observed::default(),
                }
            }
            Source::MacOs { softnet } => super::macos::observe(softnet.as_deref(), deadline).await,
        }
    }
}

/// PURE: the stand-in file, `key=value` lines (`#` starts a comment):
/// `gui_session=Aqua|Background|none`, `keychain=ok|<why not>`, `dhcp_leases_used=<n>`,
/// `softnet=ok|<why not>`. A key not given is not checked.
pub(crate) fn parse_file(text: &str) -> Observed {
    let mut o = Observed::default();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        let v = v.trim();
        match k.trim() {
            "gui_session" => {
                o.gui_session = Some((v != "none").then(|| v.to_string()));
            }
            "keychain" => o.keychain = Some(if v == "ok" { Ok(()) } else { Err(v.into()) }),
            "dhcp_leases_used" => o.dhcp_leases_used = v.parse().ok(),
            "softnet" => {
                let stat = if v == "ok" {
                    Ok((0, 0o104_755))
                } else {
                    Err(v.to_string())
                };
                o.softnet = Some(("softnet".into(), stat));
            }
            _ => {}
        }
    }
    o
}

#[cfg(test)]
mod tests;
