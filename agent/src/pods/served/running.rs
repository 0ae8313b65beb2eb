//! The VMs whose `tart run` this agent's workers hold: a worker lists its VM where a run
//! starts (or is adopted) and the listing ends with the run, so exec asks the workers, not the
//! Pod statuses they wrote, whether a VM runs.

use std::{collections::BTreeMap, sync::Arc};

use tart::VmName;
use tokio::sync::watch;

/// The shared view, each VM with the number of its live listings (a listing replaced by the
/// next one of the same VM never unlists it); clones share it.
#[derive(Clone)]
pub struct RunningVms(Arc<watch::Sender<BTreeMap<VmName, usize>>>);

impl Default for RunningVms {
    fn default() -> Self {
        Self(Arc::new(watch::Sender::new(BTreeMap::new())))
    }
}

impl RunningVms {
    /// Lists `vm` as running until the returned guard is dropped.
    #[must_use = "the VM is listed only while the guard lives"]
    pub fn started(&self, vm: &VmName) -> RunListing {
        self.0
            .send_modify(|vms| *vms.entry(vm.clone()).or_default() += 1);
        RunListing {
            vms: self.clone(),
            vm: vm.clone(),
        }
    }

    /// Whether a worker holds `vm`'s run.
    pub fn contains(&self, vm: &VmName) -> bool {
        self.0.borrow().contains_key(vm)
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

    #[test]
    fn a_listing_replaced_by_the_next_of_the_same_vm_does_not_unlist_it() {
        let running = RunningVms::default();
        let old = running.started(&vm(1));
        let new = running.started(&vm(1));
        drop(old);
        assert!(
            running.contains(&vm(1)),
            "the old listing's drop leaves the new one"
        );
        drop(new);
        assert!(!running.contains(&vm(1)));
    }
}
