use super::*;

#[test]
fn grace_keeps_a_quarter_up_to_five_seconds_for_tart_stop() {
    assert_eq!(
        split_grace(Duration::from_secs(30)),
        (Duration::from_secs(25), Duration::from_secs(5))
    );
    assert_eq!(
        split_grace(Duration::from_secs(8)),
        (Duration::from_secs(6), Duration::from_secs(2))
    );
    assert_eq!(
        split_grace(Duration::ZERO),
        (Duration::ZERO, Duration::ZERO)
    );
}

#[test]
fn tart_stop_timeout_rounds_up() {
    assert_eq!(
        tart_stop_timeout(Duration::from_millis(500)),
        Duration::from_secs(1)
    );
    assert_eq!(
        tart_stop_timeout(Duration::from_secs(5)),
        Duration::from_secs(5)
    );
    assert_eq!(tart_stop_timeout(Duration::ZERO), Duration::ZERO);
}

#[test]
fn sigkill_by_tart_stop_counts_as_killed() {
    let killed = ExitInfo {
        reason: ExitReason::Signaled,
        code: None,
        signal: Some(9),
    };
    assert_eq!(outcome_after_tart_stop(&killed), StopOutcome::Killed);
    let clean = ExitInfo {
        reason: ExitReason::Completed,
        code: Some(0),
        signal: None,
    };
    assert_eq!(outcome_after_tart_stop(&clean), StopOutcome::TartStop);
}
