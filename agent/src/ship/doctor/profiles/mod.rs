//! `doctor`'s rows for the VM profiles: one per profile, failing when this Mac cannot run it
//! (the decision the node's live host checks make, [`crate::hostcheck::profiles`]).

use super::checks::{Check, Status};
use crate::{
    config::VmProfiles,
    hostcheck::profiles::{InterfacesFact, SoftnetFact, network_unavailable},
};

/// One `vm-profile` row per configured profile, in name order: ok, or what stops it running
/// and how to fix it. `softnet` and `interfaces` are the host's facts (`None` = not checked).
pub(crate) fn profile_checks(
    profiles: &VmProfiles,
    softnet: &SoftnetFact,
    interfaces: &InterfacesFact,
) -> Vec<Check> {
    profiles
        .handlers()
        .map(|(handler, p)| {
            let Some(why) = network_unavailable(&p.network, softnet, interfaces) else {
                return Check::new(
                    "vm-profile",
                    Status::Ok,
                    format!("VM profile \"{handler}\" can run on this Mac"),
                );
            };
            let fix = match p.network {
                tart::Network::Bridged(_) => {
                    "name an interface `networksetup -listallhardwareports` lists in the \
                     profile's network = \"bridged:<interface>\""
                }
                _ => {
                    "install softnet (`brew install cirruslabs/cli/softnet`), make it root-owned \
                     and setuid (`sudo chown root <path> && sudo chmod u+s <path>`) and give \
                     its path as softnet_program"
                }
            };
            Check::new(
                "vm-profile",
                Status::Fail,
                format!(
                    "VM profile \"{handler}\" is unavailable: {why}; the Node will not \
                     advertise it and its Pods wait"
                ),
            )
            .fix(fix)
        })
        .collect()
}

#[cfg(test)]
mod tests;
