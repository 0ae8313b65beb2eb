use super::*;

fn secs(b: Backoff, n: std::ops::Range<u32>) -> Vec<f64> {
    n.map(|i| b.delay(i).as_secs_f64()).collect()
}

#[test]
fn crash_loop_is_kubelets_10s_doubling_to_5m() {
    assert_eq!(
        secs(CRASH_LOOP, 0..8),
        [10.0, 20.0, 40.0, 80.0, 160.0, 300.0, 300.0, 300.0]
    );
}

#[test]
fn requeue_doubles_from_1s_to_5m() {
    assert_eq!(secs(REQUEUE, 0..4), [1.0, 2.0, 4.0, 8.0]);
    assert_eq!(REQUEUE.delay(9), Duration::from_secs(300));
}

#[test]
fn api_retry_starts_at_half_a_second_and_stops_at_7s() {
    assert_eq!(secs(API_RETRY, 0..5), [0.5, 1.0, 2.0, 4.0, 7.0]);
}

#[test]
fn huge_attempt_counts_stay_at_the_cap() {
    for b in [CRASH_LOOP, REQUEUE, API_RETRY] {
        assert_eq!(b.delay(u32::MAX), b.max);
        assert_eq!(b.delay(64), b.max);
    }
}

#[test]
fn a_watch_backoff_follows_its_curve_until_reset() {
    use kube::runtime::utils::Backoff as _;
    let mut w = WatchBackoff::new(API_RETRY);
    let first: Vec<f64> = w.by_ref().take(6).map(|d| d.as_secs_f64()).collect();
    assert_eq!(first, [0.5, 1.0, 2.0, 4.0, 7.0, 7.0]);
    w.reset();
    assert_eq!(w.next(), Some(Duration::from_millis(500)));
}

#[test]
fn the_pod_watch_retries_within_a_second_and_a_fifth() {
    use kube::runtime::utils::Backoff as _;
    assert_eq!(secs(WATCH_RETRY, 0..4), [0.25, 0.5, 1.0, 1.0]);
    let mut w = WatchBackoff::new(WATCH_RETRY);
    for d in w.by_ref().take(20) {
        assert!(d <= Duration::from_millis(1200), "{d:?}");
    }
    w.reset();
    assert!(w.next().unwrap() <= Duration::from_millis(300));
}

#[test]
fn jitter_adds_at_most_its_share() {
    assert_eq!(REQUEUE.jittered(0, 0.0), Duration::from_secs(1));
    assert_eq!(REQUEUE.jittered(0, 1.0), Duration::from_millis(1200));
    assert_eq!(CRASH_LOOP.jittered(0, 1.0), Duration::from_secs(10));
}
