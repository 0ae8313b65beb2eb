//! `doctor`'s rows for the VM profiles: one per profile, failing when this Mac cannot run it
//! (the decision the node's live host checks make, [`crate::hostcheck::profiles`]).

use super::checks::{Check, Status};
use crate::{
    config::VmProfiles,
    hostcheck::profiles::{SoftnetFact, network_unavailable},
};

/// One `vm-profile` row per configured profile, in name order: ok, or what stops it running
/// and how to fix it. `softnet` is the softnet program's fact (`None` = not checked).
pub(crate) fn profile_checks(profiles: &VmProfiles, softnet: &SoftnetFact) -> Vec<Check> {
    profiles
        .handlers()
        .map(
            |(handler, p)| match network_unavailable(&p.network, softnet) {
                None => Check::new(
                    "vm-profile",
                    Status::Ok,
                    format!("VM profile \"{handler}\" can run on this Mac"),
                ),
                Some(why) => Check::new(
                    "vm-profile",
                    Status::Fail,
                    format!(
                        "VM profile \"{handler}\" is unavailable: {why}; the Node will not \
                     advertise it and its Pods wait"
                    ),
                )
                .fix(
                    "install softnet (`brew install cirruslabs/cli/softnet`), make it root-owned \
                 and setuid (`sudo chown root <path> && sudo chmod u+s <path>`) and give its \
                 path as softnet_program",
                ),
            },
        )
        .collect()
}

#[cfg(test)]
mod tests;
