//! The VMs whose `tart run` this agent's workers hold: a worker lists its VM where a run
//! starts (or is adopted) and the listing ends with the run, so exec asks the workers, not the
//! Pod statuses they wrote, whether a VM runs.

use std::{collections::BTreeSet, sync::Arc};

use tart::VmName;
use tokio::sync::watch;

/// The shared view; clones share it.
#[derive(Clone)]
pub struct RunningVms(Arc<watch::Sender<BTreeSet<VmName>>>);

impl Default for RunningVms {
    fn default() -> Self {
        Self(Arc::new(watch::Sender::new(BTreeSet::new())))
    }
}

impl RunningVms {
    /// Lists `vm` as running until the returned guard is dropped.
    #[must_use = "the VM is listed only while the guard lives"]
    pub fn started(&self, vm: &VmName) -> RunListing {
        self.0.send_modify(|vms| {
            vms.insert(vm.clone());
        });
        RunListing {
            vms: self.clone(),
            vm: vm.clone(),
        }
    }

    /// Whether a worker holds `vm`'s run.
    pub fn contains(&self, vm: &VmName) -> bool {
        self.0.borrow().contains(vm)
    }
}

/// One run's place in [`RunningVms`]; dropping it (the run ended, or its worker did) unlists
/// the VM.
pub struct RunListing {
    vms: RunningVms,
    vm: VmName,
}

impl Drop for RunListing {
    fn drop(&mut self) {
        self.vms.0.send_modify(|vms| {
            vms.remove(&self.vm);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vm(n: u8) -> VmName {
        VmName::new(format!("tkl-{n}")).unwrap()
    }

    #[test]
    fn a_vm_is_running_while_its_listing_lives() {
        let running = RunningVms::default();
        assert!(!running.contains(&vm(1)));
        let one = running.started(&vm(1));
        let two = running.clone().started(&vm(2));
        assert!(running.contains(&vm(1)) && running.contains(&vm(2)));
        drop(one);
        assert!(!running.contains(&vm(1)), "the ended run is unlisted");
        assert!(running.contains(&vm(2)), "the other run stays");
        drop(two);
        assert!(!running.contains(&vm(2)));
    }
}
