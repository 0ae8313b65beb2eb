//! Each Pod's end as the fleet's Pod watch ([`super::pods`]) saw it, and its count in the
//! workload's [`PoolState`]. A workload tick sees only the Pods still present, and on a loaded
//! machine the controller-manager's Pod garbage collector (over 100 ended Pods,
//! tests/cluster/start.sh) deletes ended Pods before a slow tick sees them; the watch sees
//! every change, the deletion's last state included, so every end counts once. Pure.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::Pod;

use crate::sandbox::{
    guest::Check,
    workload::{Ending, PoolState},
};

/// What the watch saw of one Pod.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PodEnd {
    /// Seen `Running` at least once.
    pub ran: bool,
    /// `Succeeded` or `Failed`, from its first sighting in any event (the deletion's included).
    pub ending: Option<Ending>,
    /// The runner's secret check, classified at that first sighting (only with a job).
    pub check: Option<Check>,
    /// Seen deleted: its delete event, or missing from the watch's relist.
    pub deleted: bool,
}

/// Every Pod's end, by name.
pub type Ends = BTreeMap<String, PodEnd>;

/// The guest's recorded exit code of the Pod with this UID, if any (runners with a job).
pub type ExitOf<'a> = &'a (dyn Fn(&str) -> Option<i32> + Sync);

/// Records what `pod` shows in one watch event (`deleted`: its delete event, the Pod's last
/// state). At the first sighting of its end, with `exit_of`, classifies the secret check
/// from the guest's exit code while the VM, and so its status share, may still be there.
pub fn observe(ends: &mut Ends, pod: &Pod, deleted: bool, exit_of: Option<ExitOf<'_>>) {
    let Some(name) = pod.metadata.name.as_deref() else {
        return;
    };
    let end = ends.entry(name.to_owned()).or_default();
    end.deleted |= deleted;
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    end.ran |= phase == Some("Running");
    if let Some(e) = phase.and_then(Ending::of_phase)
        && end.ending.is_none()
    {
        end.ending = Some(e);
        if let Some(exit_of) = exit_of {
            let uid = pod.metadata.uid.as_deref().unwrap_or_default();
            let deleting = deleted || pod.metadata.deletion_timestamp.is_some();
            let exit = exit_of(uid);
            end.check = Some(Check::classify_seen(e == Ending::Succeeded, deleting, exit));
        }
    }
}

/// After the watch relisted (it had lost its place): the Pods it knew that are not `listed`
/// were deleted meanwhile, in whatever state it saw last.
pub fn relisted(ends: &mut Ends, listed: &BTreeSet<String>) {
    for (name, end) in ends.iter_mut() {
        if !listed.contains(name) {
            end.deleted = true;
        }
    }
}

/// Counts what the watch saw in the pool: each end once (whoever saw it first), a Pod
/// deleted before any end was seen as lost, and of two secret checks of one Pod the one with
/// more evidence (an exit code over none).
pub fn count(state: &mut PoolState, ends: &Ends) {
    for (name, end) in ends {
        if end.ran && !state.ran.contains(name) {
            state.ran.insert(name.clone());
        }
        match end.ending {
            Some(e) => {
                state.ended.entry(name.clone()).or_insert(e);
            }
            None if end.deleted && !state.ended.contains_key(name) => {
                state.lost.insert(name.clone());
            }
            None => {}
        }
        if let Some(c) = end.check
            && state
                .checks
                .get(name)
                .is_none_or(|old| c.evidence() > old.evidence())
        {
            state.checks.insert(name.clone(), c);
        }
    }
    state.lost.retain(|n| !state.ended.contains_key(n));
}

#[cfg(test)]
mod tests;
