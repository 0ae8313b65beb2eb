use super::*;

#[test]
fn percentiles_are_nearest_rank() {
    let s = Summary::of((1..=100).map(|ms| ms * 1000)).unwrap();
    assert_eq!(
        (s.count, s.p50, s.p90, s.p99, s.max),
        (100, 50.0, 90.0, 99.0, 100.0)
    );
    let one = Summary::of([2500]).unwrap();
    assert_eq!((one.p50, one.p99, one.max), (2.5, 2.5, 2.5));
    assert_eq!(Summary::of([]), None);
}

#[test]
fn a_stamped_line_gives_record_time_write_time_and_number() {
    let (record, write, n) =
        parse_stamped("2026-11-24T05:31:07.123456789Z 1795498267123000 42").unwrap();
    assert_eq!(record, 1_795_498_267_123_456);
    assert_eq!((write, n), (1_795_498_267_123_000, 42));
    assert_eq!(parse_stamped("2026-11-24T05:31:07.1Z ready"), None);
    assert_eq!(parse_stamped("not a time 1 2"), None);
}
