use super::*;
use crate::vitals::model::{GuestSample, PressureLevel};

fn t(s: i64) -> Timestamp {
    Timestamp::from_second(s).unwrap()
}

fn reading(vm: &str, cpu: f64, rss: u64, guest: Option<Vec<GuestSample>>) -> Reading {
    Reading {
        host: HostSample {
            pressure: Some(PressureLevel::Normal),
            ..HostSample::default()
        },
        vms: BTreeMap::from([(
            vm.to_owned(),
            VmUsage {
                cpu_seconds_total: cpu,
                rss_bytes: rss,
            },
        )]),
        guest: BTreeMap::from([(vm.to_owned(), guest)]),
    }
}

fn g(ts: i64, free: Option<u8>) -> GuestSample {
    GuestSample {
        ts: Some(ts),
        free_percent: free,
        ..GuestSample::default()
    }
}

#[test]
fn cpu_cores_are_the_rate_between_ticks_and_totals_sum_live_vms() {
    let (s1, c1) = fold(&Snapshot::default(), reading("a", 10.0, 100, None), t(100));
    assert!(c1.host_ok);
    assert_eq!(s1.vms["a"].host.last().unwrap().cpu_cores, None);
    let (s2, _) = fold(&s1, reading("a", 15.0, 300, None), t(110));
    assert_eq!(s2.vms["a"].host.last().unwrap().cpu_cores, Some(0.5));
    assert_eq!(running_totals(&s2), (0.5, 300));
    // The VM's processes are gone but its Pod is still here: history kept, totals drop it.
    let gone = Reading {
        vms: BTreeMap::new(),
        ..reading("a", 0.0, 0, None)
    };
    let (s3, _) = fold(&s2, gone, t(120));
    assert_eq!(s3.vms["a"].host.len(), 2);
    assert_eq!(running_totals(&s3), (0.0, 0));
    // No longer wanted: dropped.
    let (s4, _) = fold(&s3, Reading::default(), t(130));
    assert!(s4.vms.is_empty());
}

#[test]
fn only_new_guest_lines_are_counted_and_empty_ones_are_errors() {
    let (s1, c1) = fold(
        &Snapshot::default(),
        reading("a", 0.0, 0, Some(vec![g(1, Some(50)), g(2, None)])),
        t(100),
    );
    assert_eq!((c1.guest_ok, c1.guest_err), (1, 1));
    let (s2, c2) = fold(
        &s1,
        reading(
            "a",
            0.0,
            0,
            Some(vec![g(1, Some(50)), g(2, None), g(3, Some(40))]),
        ),
        t(110),
    );
    assert_eq!((c2.guest_ok, c2.guest_err), (1, 0));
    assert_eq!(s2.vms["a"].guest.len(), 3);
}

#[test]
fn a_guest_is_silent_after_three_quiet_intervals() {
    let mut v = VmVitals::default();
    assert!(
        !guest_silent(&v, 1000, Duration::from_secs(10)),
        "never reported"
    );
    v.guest.push(g(1000, Some(5)));
    assert!(!guest_silent(&v, 1030, Duration::from_secs(10)));
    assert!(guest_silent(&v, 1031, Duration::from_secs(10)));
}
