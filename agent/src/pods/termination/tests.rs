use super::*;

#[test]
fn how_a_termination_ends() {
    use TerminationHow::*;
    let cases = [
        (false, false, Idle),
        (true, false, Waited),
        (true, true, GraceExpired),
        (false, true, GraceExpired),
    ];
    for (waited, busy, want) in cases {
        assert_eq!(termination_how(waited, busy), want, "{waited} {busy}");
    }
    let labels: Vec<_> = TerminationHow::ALL.iter().map(|h| h.as_str()).collect();
    assert_eq!(labels, ["idle", "waited", "grace_expired"]);
}

#[test]
fn the_stop_gets_the_rest_of_the_grace_but_at_least_two_seconds() {
    let now = Instant::now();
    let s = Duration::from_secs;
    assert_eq!(stop_grace(now + s(25), now), s(25));
    assert_eq!(stop_grace(now + s(1), now), MIN_STOP_GRACE);
    assert_eq!(stop_grace(now, now + s(10)), MIN_STOP_GRACE);
}
