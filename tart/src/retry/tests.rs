use std::sync::Mutex;

use super::*;
use crate::Error;

fn error(op: Op, kind: ErrorKind) -> Error {
    Error::new(op, kind, None, kind.as_str())
}

#[derive(Default)]
struct Rec(Mutex<Vec<Attempt>>);
impl Observer for Rec {
    fn attempt(&self, a: &Attempt) {
        self.0.lock().unwrap().push(*a);
    }
}

fn policy() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 4,
        min_delay: Duration::from_secs(1),
        max_delay: Duration::from_secs(3),
        jitter: false,
    }
}

#[test]
fn delays_double_up_to_the_cap() {
    let d: Vec<_> = policy().delays().collect();
    assert_eq!(d, [1, 2, 3].map(Duration::from_secs));
}

#[test]
fn jittered_delays_stay_within_bounds() {
    let p = RetryPolicy {
        jitter: true,
        max_attempts: 50,
        ..policy()
    };
    for (i, d) in p.delays().enumerate() {
        let base = Duration::from_secs(1 << i.min(2)).min(p.max_delay);
        assert!(d >= base && d <= p.max_delay, "{i}: {d:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn retryable_errors_are_retried_with_backoff_until_success() {
    let rec = Rec::default();
    let start = Instant::now();
    let r = policy()
        .run(Op::List, &rec, |n| async move {
            if n < 3 {
                Err(error(Op::List, ErrorKind::Network))
            } else {
                Ok(n)
            }
        })
        .await;
    assert_eq!(r.unwrap(), 3);
    assert_eq!(start.elapsed(), Duration::from_secs(3)); // 1 s + 2 s
    let a = rec.0.lock().unwrap();
    assert_eq!(a.len(), 3);
    assert!(a[0].will_retry && a[1].will_retry && !a[2].will_retry);
    assert_eq!(a[2].outcome, AttemptOutcome::Ok);
    assert_eq!(a[1].attempt, 2);
}

#[tokio::test(start_paused = true)]
async fn non_retryable_error_returns_at_once() {
    let rec = Rec::default();
    let r: Result<()> = policy()
        .run(Op::Get, &rec, |_| async {
            Err(error(Op::Get, ErrorKind::NotFound))
        })
        .await;
    assert_eq!(r.unwrap_err().kind, ErrorKind::NotFound);
    assert_eq!(rec.0.lock().unwrap().len(), 1);
    assert!(!rec.0.lock().unwrap()[0].will_retry);
}

#[tokio::test(start_paused = true)]
async fn attempts_are_bounded() {
    let rec = Rec::default();
    let r: Result<()> = policy()
        .run(Op::Set, &rec, |_| async {
            Err(error(Op::Set, ErrorKind::LockBusy))
        })
        .await;
    assert_eq!(r.unwrap_err().kind, ErrorKind::LockBusy);
    assert_eq!(rec.0.lock().unwrap().len(), 4);
}

#[tokio::test(start_paused = true)]
async fn killed_pull_is_retried_immediately_once() {
    let rec = Rec::default();
    let start = Instant::now();
    let r: Result<()> = policy()
        .run(Op::Pull, &rec, |_| async {
            Err(error(Op::Pull, ErrorKind::Stalled))
        })
        .await;
    assert!(r.is_err());
    // delays: 0 (immediate), 1 s, 2 s.
    assert_eq!(start.elapsed(), Duration::from_secs(3));
    let a = rec.0.lock().unwrap();
    assert!(a.iter().all(|a| a.killed));
    assert_eq!(a.len(), 4);
}
