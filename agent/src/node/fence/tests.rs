use super::*;

#[test]
fn publishing_needs_an_unexpired_lease_and_no_fence() {
    let t0 = Instant::now();
    let s = Duration::from_secs(1);
    let cases = [
        // (fenced, held until, now, may publish)
        (false, Some(t0 + 40 * s), t0, true),
        (false, Some(t0 + 40 * s), t0 + 39 * s, true),
        (false, Some(t0 + 40 * s), t0 + 40 * s, false),
        (false, None, t0, false),
        (true, Some(t0 + 40 * s), t0, false),
    ];
    for (i, (fenced, until, now, want)) in cases.into_iter().enumerate() {
        assert_eq!(may_publish(fenced, until, now), want, "case {i}");
    }
}

#[test]
fn a_fence_holds_after_a_renewal_until_raised() {
    let f = Fence::default();
    assert!(!f.holds(), "nothing written yet");
    f.renewed(Instant::now(), Duration::from_secs(40));
    assert!(f.holds());
    let expired = Fence::default();
    expired.renewed(
        Instant::now() - Duration::from_secs(41),
        Duration::from_secs(40),
    );
    assert!(!expired.holds(), "the Lease expired");
    f.clone().raise("n_other".into());
    assert!(!f.holds(), "clones share the fence");
}

#[tokio::test]
async fn the_pod_side_stops_when_fenced_or_on_shutdown() {
    let (sd_tx, sd_rx) = watch::channel(false);
    let fence = Fence::default();
    let mut pods = pod_shutdown(sd_rx.clone(), &fence);
    assert!(!*pods.borrow());
    fence.raise("n_other".into());
    tokio::time::timeout(Duration::from_secs(1), pods.wait_for(|s| *s))
        .await
        .expect("fenced in time")
        .unwrap();

    let mut pods = pod_shutdown(sd_rx, &Fence::default());
    sd_tx.send_replace(true);
    tokio::time::timeout(Duration::from_secs(1), pods.wait_for(|s| *s))
        .await
        .expect("shut down in time")
        .unwrap();
}
