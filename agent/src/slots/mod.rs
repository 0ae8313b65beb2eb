//! Local enforcement of the node's VM slots (Apple allows two macOS guests per host).
//!
//! The scheduler already counts the `tart.run/vm-slots` extended resource, but Pods that do
//! not request it, or the window between a Pod being deleted and its VM being gone, could
//! still exceed the host limit; so the Pod side takes a slot here before every `tart run` and
//! holds the [`SlotGuard`] for as long as the VM exists. A Pod that finds no free slot waits
//! Pending (see [`VmSlots::changed`] to wake up when one frees); it never fails for that.
//!
//! Owns the `tart_kubelet_vm_slots_used` gauge value; the metric itself is registered by
//! [`crate::metrics`].

use std::{
    collections::BTreeSet,
    sync::{Arc, Mutex},
};

use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::watch;

/// The node's VM slots. Cheap to clone; all clones share the same slots.
#[derive(Clone, Debug)]
pub(crate) struct VmSlots {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    total: u32,
    /// Pod UIDs holding a slot.
    held: Mutex<BTreeSet<String>>,
    used_gauge: Gauge,
    /// Number of slots in use, for waiters.
    used_tx: watch::Sender<u32>,
}

/// A held slot. Dropping it frees the slot (RAII): keep it alive exactly as long as the VM
/// exists (running or stopping).
#[derive(Debug)]
pub(crate) struct SlotGuard {
    slots: VmSlots,
    owner: String,
}

impl VmSlots {
    /// `total` slots; `used_gauge` is kept equal to [`VmSlots::used`].
    pub(crate) fn new(total: u32, used_gauge: Gauge) -> Self {
        used_gauge.set(0);
        let (used_tx, _) = watch::channel(0);
        Self {
            inner: Arc::new(Inner {
                total,
                held: Mutex::new(BTreeSet::new()),
                used_gauge,
                used_tx,
            }),
        }
    }

    /// Take a free slot for the Pod with `owner_uid`. `None` when all slots are in use, or
    /// when this owner already holds one (an owner holds at most one slot; keep its guard).
    pub(crate) fn try_acquire(&self, owner_uid: &str) -> Option<SlotGuard> {
        let mut held = self.lock();
        if held.len() >= self.inner.total as usize || held.contains(owner_uid) {
            return None;
        }
        held.insert(owner_uid.to_owned());
        self.publish(held.len());
        Some(self.guard(owner_uid))
    }

    /// Record a slot for a VM found running at start-up (restart recovery). Always succeeds,
    /// even past `total`: the VM exists whatever we think, and new VMs then wait until enough
    /// slots are free. `None` only if `owner_uid` already holds a slot.
    pub(crate) fn acquire_for_adopted(&self, owner_uid: &str) -> Option<SlotGuard> {
        let mut held = self.lock();
        if !held.insert(owner_uid.to_owned()) {
            return None;
        }
        self.publish(held.len());
        Some(self.guard(owner_uid))
    }

    /// Whether `owner_uid` holds a slot.
    #[cfg(test)]
    pub(crate) fn holds(&self, owner_uid: &str) -> bool {
        self.lock().contains(owner_uid)
    }

    /// Slots in use (may exceed [`VmSlots::total`] after adoption).
    pub(crate) fn used(&self) -> u32 {
        self.lock().len() as u32
    }

    /// Configured number of slots.
    pub(crate) fn total(&self) -> u32 {
        self.inner.total
    }

    /// A receiver of the number of used slots; `changed().await` wakes when a slot is taken
    /// or freed, so a waiting Pod can retry at once instead of polling.
    pub(crate) fn changed(&self) -> watch::Receiver<u32> {
        self.inner.used_tx.subscribe()
    }

    fn guard(&self, owner: &str) -> SlotGuard {
        SlotGuard {
            slots: self.clone(),
            owner: owner.to_owned(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        // A panic while holding this lock cannot leave the set inconsistent (single insert or
        // remove), so a poisoned lock is still usable.
        self.inner
            .held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn publish(&self, used: usize) {
        self.inner.used_gauge.set(used as i64);
        self.inner.used_tx.send_replace(used as u32);
    }
}

impl Drop for SlotGuard {
    fn drop(&mut self) {
        let mut held = self.slots.lock();
        held.remove(&self.owner);
        let used = held.len();
        drop(held);
        self.slots.publish(used);
    }
}

#[cfg(test)]
mod tests;
