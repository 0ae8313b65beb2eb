//! PURE: whether this Mac can run a VM profile's network, from facts the host checks gather.
//! A profile it cannot run is reported (the Node drops its handler label, `doctor` shows a
//! row) and its Pods wait, instead of `tart run` failing in a loop (docs/node.md, "VM profiles
//! this Mac cannot run").

use tart::Network;

use super::{OwnerAndMode, verdict};

/// Where the softnet program is looked up when none is configured: `softnet` on `PATH`, as
/// Tart does (docs/reference/tart-cli.md §1.2).
pub(crate) const SOFTNET_ON_PATH: &str = "softnet";

/// The softnet program `tart run --net-softnet` (and `--net-host`) uses, and its
/// `(owner uid, mode)`; `None` = not checked.
pub(crate) type SoftnetFact = Option<(String, OwnerAndMode)>;

/// The host's network interface names (`getifaddrs`); `None` = not checked.
pub(crate) type InterfacesFact = Option<Vec<String>>;

/// Why a profile with `network` cannot run on this Mac, or `None` when it can (or its facts
/// were not checked: a profile is never called unavailable on a guess).
pub(crate) fn network_unavailable(
    network: &Network,
    softnet: &SoftnetFact,
    interfaces: &InterfacesFact,
) -> Option<String> {
    match network {
        Network::Softnet { .. } | Network::Host => {
            let (path, stat) = softnet.as_ref()?;
            verdict::softnet_failure(path, stat.clone())
        }
        Network::Bridged(iface) => {
            let found = interfaces.as_ref()?;
            (!found.contains(iface)).then(|| {
                format!("network interface {iface:?} does not exist on this Mac: `tart run --net-bridged` will fail")
            })
        }
        _ => None,
    }
}

/// The host's interface names, on macOS only: elsewhere the agent runs beside fake-tart, whose
/// bridged interfaces are not the host's.
pub(crate) fn interfaces_fact(macos: bool) -> InterfacesFact {
    if !macos {
        return None;
    }
    let mut names: Vec<String> = nix::ifaddrs::getifaddrs()
        .ok()?
        .map(|a| a.interface_name)
        .collect();
    names.sort();
    names.dedup();
    Some(names)
}

/// The softnet fact: the configured program, else (on macOS) `softnet` on `path` (the `PATH`
/// variable's value), with its owner and mode. Elsewhere an unconfigured program is not
/// checked: the agent then runs beside fake-tart, not Tart.
pub(crate) fn softnet_fact(
    configured: Option<&std::path::Path>,
    path: Option<&std::ffi::OsStr>,
    macos: bool,
) -> SoftnetFact {
    let program = match configured {
        Some(p) => p.to_path_buf(),
        None if macos => match path
            .into_iter()
            .flat_map(std::env::split_paths)
            .map(|dir| dir.join(SOFTNET_ON_PATH))
            .find(|p| p.is_file())
        {
            Some(p) => p,
            None => {
                return Some((
                    SOFTNET_ON_PATH.into(),
                    Err("not configured (softnet_program) and not on PATH".into()),
                ));
            }
        },
        None => return None,
    };
    Some((
        program.display().to_string(),
        super::owner_and_mode(&program),
    ))
}

#[cfg(test)]
mod tests;
