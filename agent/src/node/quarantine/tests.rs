use super::*;
use tart::ErrorKind::{AuxStorageLocked, VmLimit};

const MIN: Duration = Duration::from_secs(60);

fn q() -> Quarantine {
    Quarantine::new(Policy {
        faults: 3,
        window: 10 * MIN,
        cooldown: 15 * MIN,
    })
}

#[test]
fn three_faults_within_the_window_quarantine_for_the_cooldown() {
    let t0 = Instant::now();
    let mut q = q();
    q.fault(t0, VmLimit);
    q.fault(t0 + MIN, VmLimit);
    assert_eq!(q.current(t0 + MIN), None, "two faults are not enough");
    q.fault(t0 + 2 * MIN, AuxStorageLocked);
    let a = q.current(t0 + 2 * MIN).expect("quarantined");
    assert_eq!(
        (a.kind, a.count, a.since),
        (AuxStorageLocked, 3, t0 + 2 * MIN)
    );
    assert!(q.current(t0 + 16 * MIN).is_some(), "still cooling down");
    assert_eq!(q.current(t0 + 17 * MIN), None, "lifted after the cool-down");
    q.fault(t0 + 18 * MIN, VmLimit);
    assert_eq!(
        q.current(t0 + 18 * MIN),
        None,
        "the spent faults do not count again"
    );
}

#[test]
fn faults_spread_wider_than_the_window_never_quarantine() {
    let t0 = Instant::now();
    let mut q = q();
    for i in 0..6 {
        q.fault(t0 + i * 6 * MIN, VmLimit);
        assert_eq!(q.current(t0 + i * 6 * MIN), None, "fault {i}");
    }
}

#[test]
fn a_fault_while_quarantined_extends_it_and_a_started_vm_lifts_it() {
    let t0 = Instant::now();
    let mut q = q();
    for i in 0..3 {
        q.fault(t0 + i * MIN, VmLimit);
    }
    q.fault(t0 + 10 * MIN, VmLimit);
    let a = q.current(t0 + 20 * MIN).expect("extended");
    assert_eq!(
        (a.count, a.since, a.until),
        (4, t0 + 2 * MIN, t0 + 25 * MIN)
    );
    q.vm_started();
    assert_eq!(q.current(t0 + 20 * MIN), None);
}

#[test]
fn a_threshold_of_zero_means_one() {
    let t0 = Instant::now();
    let mut q = Quarantine::new(Policy {
        faults: 0,
        ..Policy::default()
    });
    q.fault(t0, VmLimit);
    assert!(q.current(t0).is_some());
}
