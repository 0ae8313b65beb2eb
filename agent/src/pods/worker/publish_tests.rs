//! Which state changes wake the reconciler: every change it acts on, none of the provisioning
//! progress it does not.

use super::publish::wakes_reconciler;
use super::*;
use crate::pods::reasons::WaitingReason;

fn creating() -> WorkerState {
    WorkerState::creating(VmName::new("vm-1").unwrap())
}

#[test]
fn the_reconciler_is_woken_only_by_what_it_acts_on() {
    type Change = fn(&mut WorkerState);
    let cases: &[(&str, Change, Change, bool)] = &[
        (
            "image present",
            |_| {},
            |s| s.facts.image_ready = true,
            false,
        ),
        (
            "cloned after the guest was prepared",
            |s| s.facts.prepared = true,
            |s| s.facts.cloned = true,
            false,
        ),
        (
            "configured",
            |s| s.facts.cloned = true,
            |s| s.facts.configured = true,
            false,
        ),
        ("slot taken", |_| {}, |s| s.facts.slot_held = true, false),
        (
            "slot given back",
            |s| s.facts.slot_held = true,
            |s| s.facts.slot_held = false,
            false,
        ),
        // Whether a VM may exist decides between deleting it and removing the finalizer: its
        // going wakes the reconciler, its coming is the worker's to act on.
        (
            "guest prepared: a VM may exist",
            |_| {},
            |s| s.facts.prepared = true,
            false,
        ),
        ("cloned first", |_| {}, |s| s.facts.cloned = true, false),
        (
            "the guest directory, all that may exist, is gone",
            |s| s.facts.prepared = true,
            |s| s.facts.prepared = false,
            true,
        ),
        (
            "VM and guest deleted",
            |s| {
                s.facts.prepared = true;
                s.facts.cloned = true;
            },
            |s| {
                s.facts.prepared = false;
                s.facts.cloned = false;
            },
            true,
        ),
        (
            "tart run started",
            |_| {},
            |s| {
                s.facts.process = Process::Running {
                    has_ip: false,
                    marked: false,
                }
            },
            true,
        ),
        (
            "waiting for a slot",
            |_| {},
            |s| s.view = ContainerView::waiting(WaitingReason::WaitingForVmSlot, Some("x".into())),
            true,
        ),
        (
            "image digest known",
            |_| {},
            |s| s.image_id = Some("r@sha256:0".into()),
            true,
        ),
        (
            "address",
            |_| {},
            |s| s.pod_ip = Some([192, 168, 64, 2].into()),
            true,
        ),
        ("adopted", |_| {}, |s| s.adopted = true, true),
        ("job busy", |_| {}, |s| s.facts.job_busy = true, true),
        ("restarted", |_| {}, |s| s.facts.restarts = 1, true),
        ("finished", |_| {}, |s| s.facts.finished = true, true),
        ("nothing", |_| {}, |_| {}, false),
    ];
    for (what, setup, change, wakes) in cases {
        let mut before = creating();
        setup(&mut before);
        let mut after = before.clone();
        change(&mut after);
        assert_eq!(wakes_reconciler(&before, &after), *wakes, "{what}");
    }
}
