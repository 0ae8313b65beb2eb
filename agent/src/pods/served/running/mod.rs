//! The VMs whose `tart run` this agent's workers hold: a worker lists its VM where a run
//! starts (or is adopted) and the listing ends with the run, so exec asks the workers, not the
//! Pod statuses they wrote, whether a VM runs.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, MutexGuard, PoisonError},
};

use tart::VmName;

/// The shared view, each VM with the number of its live listings (a worker lists its next run
/// before the previous one's listing is dropped, and that drop must not unlist the VM); clones
/// share it.
#[derive(Clone, Default)]
pub(crate) struct RunningVms(Arc<Mutex<HashMap<VmName, usize>>>);

impl RunningVms {
    /// Lists `vm` as running until the returned guard is dropped.
    #[must_use = "the VM is listed only while the guard lives"]
    pub(crate) fn started(&self, vm: &VmName) -> RunListing {
        *self.lock().entry(vm.clone()).or_default() += 1;
        RunListing {
            vms: self.clone(),
            vm: vm.clone(),
        }
    }

    /// Whether a worker holds `vm`'s run.
    pub(crate) fn contains(&self, vm: &VmName) -> bool {
        self.lock().contains_key(vm)
    }

    /// The counts; a panic elsewhere while holding the lock leaves them consistent (every
    /// update is a single step), so a poisoned lock is used as is.
    fn lock(&self) -> MutexGuard<'_, HashMap<VmName, usize>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One run's place in [`RunningVms`]; dropping it (the run ended, or its worker did) unlists
/// the VM.
pub(crate) struct RunListing {
    vms: RunningVms,
    vm: VmName,
}

impl Drop for RunListing {
    fn drop(&mut self) {
        let mut vms = self.vms.lock();
        if let Some(n) = vms.get_mut(&self.vm) {
            *n -= 1;
            if *n == 0 {
                vms.remove(&self.vm);
            }
        }
    }
}

#[cfg(test)]
mod tests;
