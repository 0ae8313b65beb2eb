use super::*;

use Woke::{Changed, Timer};

fn periods() -> Periods {
    Periods {
        fallback: Duration::from_secs(1),
        poll: Duration::from_millis(10),
    }
}

/// How waits ended and whether the step after each found new data.
type Steps<'a> = &'a [(Woke, bool)];

/// The period after feeding `steps` to a watched waiter, and whether it polls.
fn after(steps: Steps<'_>) -> (Duration, bool) {
    let mut p = Pace::new(periods(), true);
    for (woke, found) in steps {
        p.after(*woke, *found);
    }
    (p.period(), p.polling())
}

#[test]
fn a_watched_waiter_looks_at_the_fallback_period_until_the_watch_misses_writes() {
    let slow = (Duration::from_secs(1), false);
    let fast = (Duration::from_millis(10), true);
    let cases: &[(Steps<'_>, (Duration, bool))] = &[
        (&[], slow),
        (&[(Changed, true), (Changed, false)], slow),
        // Quiet files: the fallback finds nothing.
        (&[(Timer, false), (Timer, false), (Timer, false)], slow),
        // One find at the fallback: a notification may have been on its way.
        (&[(Timer, true)], slow),
        // ... and it came: the count starts again.
        (&[(Timer, true), (Changed, false), (Timer, true)], slow),
        // Two finds with no notification between: the watch misses writes.
        (&[(Timer, true), (Timer, true)], fast),
        (&[(Timer, true), (Timer, false), (Timer, true)], fast),
        // Once given up, notifications do not bring the watch back.
        (&[(Timer, true), (Timer, true), (Changed, true)], fast),
    ];
    for (steps, want) in cases {
        assert_eq!(after(steps), *want, "{steps:?}");
    }
}

#[test]
fn the_step_that_gives_up_the_watch_says_so_once() {
    let mut p = Pace::new(periods(), true);
    assert!(!p.after(Timer, true));
    assert!(p.after(Timer, true));
    assert!(!p.after(Timer, true));
}

#[test]
fn without_a_watch_a_waiter_polls() {
    let mut p = Pace::new(periods(), false);
    assert_eq!(p.period(), Duration::from_millis(10));
    assert!(!p.after(Timer, true));
    let mut w = Pace::new(periods(), true);
    w.set_watched(false);
    assert_eq!((w.period(), w.polling()), (Duration::from_millis(10), true));
}
