//! The VMs whose `tart run` this agent's workers hold: a worker lists its VM where a run
//! starts (or is adopted) and the listing ends with the run, so exec asks the workers, not the
//! Pod statuses they wrote, whether a VM runs.

use std::{collections::BTreeMap, sync::Arc};

use tart::VmName;
use tokio::sync::watch;

/// The shared view, each VM with the number of its live listings (a listing replaced by the
/// next one of the same VM never unlists it); clones share it.
#[derive(Clone)]
pub(crate) struct RunningVms(Arc<watch::Sender<BTreeMap<VmName, usize>>>);

impl Default for RunningVms {
    fn default() -> Self {
        Self(Arc::new(watch::Sender::new(BTreeMap::new())))
    }
}

impl RunningVms {
    /// Lists `vm` as running until the returned guard is dropped.
    #[must_use = "the VM is listed only while the guard lives"]
    pub(crate) fn started(&self, vm: &VmName) -> RunListing {
        self.0
            .send_modify(|vms| *vms.entry(vm.clone()).or_default() += 1);
        RunListing {
            vms: self.clone(),
            vm: vm.clone(),
        }
    }

    /// Whether a worker holds `vm`'s run.
    pub(crate) fn contains(&self, vm: &VmName) -> bool {
        self.0.borrow().contains_key(vm)
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
        self.vms.0.send_modify(|vms| {
            if let Some(n) = vms.get_mut(&self.vm) {
                *n -= 1;
                if *n == 0 {
                    vms.remove(&self.vm);
                }
            }
        });
    }
}

#[cfg(test)]
mod tests;
