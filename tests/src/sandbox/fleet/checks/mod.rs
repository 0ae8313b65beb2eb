//! The fleet scenario's own invariants, from its report section: the pre-pull roll completed
//! (every Mac held the new image before the roll's bound, and Pods ran it), and the fleet never
//! pulled more at once than the pre-pull's cap. Pure.

use crate::sandbox::{
    invariants::check,
    report::{Invariant, fleet::FleetReport},
};

/// The invariants `f` must hold.
pub fn invariants(f: &FleetReport) -> Vec<Invariant> {
    let r = &f.roll;
    vec![
        check(
            "fleet_roll_completed",
            r.completed && r.pods_on_new_image > 0,
            format!(
                "began after {:?} Pods; every Mac held {}: {}; {} Pods on it; {} nodes without a token seen",
                r.began_after_pods,
                r.image_to,
                r.completed,
                r.pods_on_new_image,
                r.nodes_without_token
            ),
        ),
        check(
            "fleet_prepull_within_cap",
            r.peak_concurrent_pulls <= r.pull_cap,
            format!(
                "{} pulls at once in the registry, cap {}",
                r.peak_concurrent_pulls, r.pull_cap
            ),
        ),
    ]
}

#[cfg(test)]
mod tests;
