use std::time::Duration;

use super::*;

#[test]
fn arrivals_are_due_at_the_rate_from_the_first_at_once_and_never_past_the_total() {
    let s = Duration::from_secs_f64;
    for (rate, elapsed, total, want) in [
        (4.0, 0.0, 100, 1),
        (4.0, 0.24, 100, 1),
        (4.0, 0.25, 100, 2),
        (4.0, 10.0, 100, 41),
        (4.0, 1000.0, 100, 100),
        (0.5, 3.0, 100, 2),
        (0.0, 50.0, 100, 1),
        (-1.0, 50.0, 100, 1),
    ] {
        assert_eq!(
            due(rate, s(elapsed), total),
            want,
            "{rate}/s after {elapsed} s"
        );
    }
}

#[test]
fn the_roll_begins_after_a_third_and_the_last_sixth_waits_for_its_end() {
    assert_eq!(roll_at(2000), 666);
    assert_eq!(roll_at(6), 2);
    assert_eq!(roll_at(2), 1);
    assert_eq!(before_settled(2000), 1667);
    assert_eq!(before_settled(6), 5);
    assert_eq!(before_settled(20), 17);
    // Fewer than six: still one held back.
    assert_eq!(before_settled(3), 2);
}

#[test]
fn the_roll_goes_before_rolling_then_rolled_or_gave_up() {
    let bound = Bound {
        roll: Duration::from_secs(100),
        stall: Duration::from_secs(30),
    };
    let seen = |created, fleet_holds, rolling_for, idle_for| Seen {
        created,
        fleet_holds,
        rolling_for: Duration::from_secs(rolling_for),
        idle_for: Duration::from_secs(idle_for),
    };
    for (phase, s, want) in [
        (Phase::Before, seen(9, false, 0, 0), Phase::Before),
        (Phase::Before, seen(10, false, 0, 0), Phase::Rolling),
        // A fleet that holds the image before the roll began is not rolled yet.
        (Phase::Before, seen(5, true, 0, 0), Phase::Before),
        (Phase::Rolling, seen(20, false, 50, 50), Phase::Rolling),
        (Phase::Rolling, seen(20, true, 50, 0), Phase::Rolled),
        (Phase::Rolling, seen(20, false, 101, 31), Phase::GaveUp),
        // Past the bound, a roll whose pulls keep ending goes on; one that stalls gives up.
        (Phase::Rolling, seen(20, false, 101, 5), Phase::Rolling),
        (Phase::Rolling, seen(20, false, 400, 29), Phase::Rolling),
        (Phase::Rolling, seen(20, false, 400, 31), Phase::GaveUp),
        // Before the bound, no stall gives up.
        (Phase::Rolling, seen(20, false, 99, 99), Phase::Rolling),
        // Holding the image at the bound still counts as rolled.
        (Phase::Rolling, seen(20, true, 101, 31), Phase::Rolled),
        (Phase::Rolled, seen(30, false, 0, 0), Phase::Rolled),
        (Phase::GaveUp, seen(30, true, 0, 0), Phase::GaveUp),
    ] {
        assert_eq!(next(phase, &s, 10, bound), want, "{phase:?} {s:?}");
    }
    assert!(!Phase::Before.settled() && !Phase::Rolling.settled());
    assert!(Phase::Rolled.settled() && Phase::GaveUp.settled());
}
