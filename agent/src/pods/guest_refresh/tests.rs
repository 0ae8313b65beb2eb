use super::*;

#[test]
fn the_wait_is_the_period_unless_a_token_is_due_sooner() {
    let now = Timestamp::from_second(1_000_000).unwrap();
    let at = |s: i64| Some(Timestamp::from_second(1_000_000 + s).unwrap());
    assert_eq!(next_wait(now, None), REFRESH_PERIOD);
    assert_eq!(next_wait(now, at(3600)), REFRESH_PERIOD);
    assert_eq!(next_wait(now, at(5)), Duration::from_secs(5));
    assert_eq!(next_wait(now, at(0)), MIN_WAIT);
    assert_eq!(next_wait(now, at(-30)), MIN_WAIT);
}
