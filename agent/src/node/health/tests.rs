use std::time::Duration;

use super::*;
use tart::ErrorKind;

fn ok_probe() -> TartProbe {
    TartProbe::Ok {
        version: "2.35.0".into(),
    }
}

#[tokio::test(start_paused = true)]
async fn repeated_vm_limit_faults_make_tart_unusable_until_a_vm_starts() {
    let h = HostHealth::new(2, Duration::from_secs(600));
    h.set_probe(ok_probe());
    let mut rx = h.subscribe();
    rx.borrow_and_update();
    h.record_host_fault(ErrorKind::VmLimit);
    assert!(h.snapshot().tart_usable(), "one fault is not enough");
    h.record_host_fault(ErrorKind::VmLimit);
    assert!(rx.has_changed().unwrap(), "status loop is woken");
    let snap = h.snapshot();
    assert_eq!(
        snap.fault.as_ref().map(HostFault::reason),
        Some("VMLimitReached")
    );
    assert!(!snap.tart_usable());
    h.record_vm_start_ok();
    assert!(h.snapshot().tart_usable());
}

#[tokio::test(start_paused = true)]
async fn the_quarantine_lifts_after_its_cooldown() {
    let h = HostHealth::with_policy(Policy {
        faults: 2,
        window: Duration::from_secs(60),
        cooldown: Duration::from_secs(300),
    });
    h.set_probe(ok_probe());
    h.record_host_fault(ErrorKind::AuxStorageLocked);
    h.record_host_fault(ErrorKind::AuxStorageLocked);
    assert_eq!(
        h.snapshot().fault.map(|f| f.reason()),
        Some("AuxiliaryStorageLocked")
    );
    tokio::time::advance(Duration::from_secs(299)).await;
    assert!(h.snapshot().fault.is_some());
    tokio::time::advance(Duration::from_secs(1)).await;
    assert_eq!(h.snapshot().fault, None);
}

#[tokio::test(start_paused = true)]
async fn failing_host_checks_show_in_the_snapshot_and_wake_the_loop() {
    let h = HostHealth::default();
    h.set_probe(ok_probe());
    let mut rx = h.subscribe();
    rx.borrow_and_update();
    assert!(!h.snapshot().checked, "no round of host checks yet");
    h.set_checks(
        vec![Failure {
            check: crate::hostcheck::HostCheck::GuiSession,
            message: "no GUI session".into(),
        }],
        BTreeMap::new(),
    );
    assert!(rx.has_changed().unwrap());
    assert!(h.snapshot().checked);
    assert!(!h.snapshot().tart_usable());
    h.set_checks(Vec::new(), BTreeMap::new());
    assert!(h.snapshot().tart_usable());
}

#[tokio::test(start_paused = true)]
async fn workload_faults_are_ignored() {
    let h = HostHealth::new(1, Duration::from_secs(60));
    h.set_probe(ok_probe());
    h.record_host_fault(ErrorKind::NotFound);
    h.record_host_fault(ErrorKind::Auth);
    assert!(h.snapshot().tart_usable());
    h.record_host_fault(ErrorKind::NoSpace);
    assert_eq!(h.snapshot().fault.map(|f| f.reason()), Some("DiskFull"));
}
