use super::*;

#[test]
fn defaults_follow_spec_section_7() {
    let d = Deadlines::default();
    assert_eq!(d.list, Duration::from_secs(60));
    assert_eq!(d.clone, Duration::from_secs(300));
    assert_eq!(d.pull_stall, Duration::from_secs(600));
    assert_eq!(d.ip_extra, Duration::from_secs(15));
    assert_eq!(d.stop_extra, Duration::from_secs(15));
    // A 25 GB image: 25 × 60 s + 10 min = 35 min after its disk line.
    let now = tokio::time::Instant::now();
    let at = d.pull_size.at(now, 25.0);
    assert_eq!(at - now, Duration::from_secs(35 * 60));
    // Nonsense sizes never overflow or shorten the bound below the base.
    assert!(d.pull_size.at(now, f64::NAN) > now + d.pull_size.base);
    assert_eq!(d.pull_size.at(now, -3.0) - now, d.pull_size.base);
}
