use super::*;

#[test]
fn a_series_keeps_the_newest_thirty() {
    let s: Series<usize> = (0..45).collect();
    assert_eq!(s.len(), HISTORY);
    assert_eq!(s.iter().next(), Some(&15));
    assert_eq!(s.last(), Some(&44));
    assert_eq!(s.tail(3), vec![42, 43, 44]);
}

#[test]
fn pressure_levels_round_trip_through_the_dispatch_encoding() {
    for l in [
        PressureLevel::Normal,
        PressureLevel::Warning,
        PressureLevel::Critical,
    ] {
        assert_eq!(PressureLevel::from_level(l.level()), Some(l));
    }
    assert_eq!(PressureLevel::from_level(3), None);
}

#[test]
fn a_guest_sample_with_only_a_timestamp_is_empty() {
    let s = GuestSample {
        ts: Some(1),
        ..GuestSample::default()
    };
    assert!(s.is_empty());
    assert!(
        !GuestSample {
            load_1m: Some(0.5),
            ..s
        }
        .is_empty()
    );
}
