use std::time::Duration;

use super::*;
use crate::container_logs::testing::append;

const WAIT: Duration = Duration::from_secs(5);

fn os_watch(periods: Periods) -> LogWatch {
    LogWatch::os_for_tests(periods)
}

/// Wait on `w` and say how it ended; fails the test when nothing wakes it within [`WAIT`].
async fn woken(w: &mut Wake) -> Woke {
    tokio::time::timeout(WAIT, w.wait())
        .await
        .expect("a notification");
    w.last
}

#[tokio::test]
async fn a_write_a_new_file_and_a_rename_each_wake_the_waiter() {
    let dir = tempfile::tempdir().unwrap();
    let (out, other) = (dir.path().join("stdout"), dir.path().join("other"));
    let watch = os_watch(Periods::never());
    // Followed before it exists: the guest creates its output file later.
    let mut w = watch.wake_on(std::slice::from_ref(&out));
    assert!(!w.polling());
    append(&out, "created\n");
    assert_eq!(woken(&mut w).await, Woke::Changed);
    // Anything that came meanwhile is in one wake: drain it.
    append(&out, "more\n");
    assert_eq!(woken(&mut w).await, Woke::Changed);
    append(&other, "x");
    assert_eq!(woken(&mut w).await, Woke::Changed, "a new entry");
    std::fs::rename(&out, dir.path().join("stdout.1")).unwrap();
    assert_eq!(woken(&mut w).await, Woke::Changed, "a rename");
}

#[tokio::test]
async fn waiters_share_a_directory_watch_released_with_the_last() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("0.log");
    let watch = os_watch(Periods::never());
    let mut a = watch.wake_on(std::slice::from_ref(&f));
    let mut b = watch.wake_on(std::slice::from_ref(&f));
    assert_eq!(watch.watched_dirs(), 1);
    append(&f, "line\n");
    assert_eq!(woken(&mut a).await, Woke::Changed);
    assert_eq!(woken(&mut b).await, Woke::Changed);
    drop(a);
    assert_eq!(watch.watched_dirs(), 1);
    drop(b);
    assert_eq!(watch.watched_dirs(), 0);
}

#[tokio::test]
async fn a_removed_directory_wakes_its_waiter_which_then_polls() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("ns_p_u1");
    std::fs::create_dir(&sub).unwrap();
    let watch = os_watch(Periods::never());
    let mut w = watch.wake_on(&[sub.join("0.log")]);
    std::fs::remove_dir(&sub).unwrap();
    assert_eq!(woken(&mut w).await, Woke::Changed);
    let deadline = std::time::Instant::now() + WAIT;
    while !w.polling() {
        assert!(std::time::Instant::now() < deadline, "still watched");
        // The directory's removal and the end of its watch are two events.
        let _ = tokio::time::timeout(Duration::from_millis(50), w.wait()).await;
    }
    assert_eq!(watch.watched_dirs(), 0);
}

#[tokio::test]
async fn a_missing_directory_gives_a_polling_waiter() {
    let watch = os_watch(Periods::never());
    let w = watch.wake_on(&[PathBuf::from("/nonexistent-tkl/x/stdout")]);
    assert!(w.polling());
    assert_eq!(watch.watched_dirs(), 0);
    let polling = LogWatch::polling(Periods::never()).wake_on(&[PathBuf::from("/tmp/x")]);
    assert!(polling.polling());
}

#[tokio::test(start_paused = true)]
async fn a_notification_ends_the_wait_long_before_the_fallback() {
    let watch = LogWatch::manual(Periods {
        fallback: Duration::from_secs(60),
        poll: Duration::from_millis(25),
    });
    let mut w = watch.wake_on(&[PathBuf::from("/d/stdout")]);
    let t0 = tokio::time::Instant::now();
    let waiting = tokio::spawn(async move {
        w.wait().await;
        w
    });
    tokio::time::sleep(Duration::from_millis(5)).await;
    watch.fire();
    let mut w = waiting.await.unwrap();
    assert_eq!(w.last, Woke::Changed);
    assert!(t0.elapsed() < Duration::from_secs(1), "{:?}", t0.elapsed());
    // Without a notification the wait lasts the fallback period.
    let t1 = tokio::time::Instant::now();
    w.wait().await;
    assert_eq!(
        (w.last, t1.elapsed()),
        (Woke::Timer, Duration::from_secs(60))
    );
}

#[tokio::test(start_paused = true)]
async fn a_watch_that_misses_writes_turns_its_waiter_to_polling() {
    let watch = LogWatch::manual(Periods {
        fallback: Duration::from_secs(1),
        poll: Duration::from_millis(25),
    });
    let mut w = watch.wake_on(&[PathBuf::from("/d/stdout")]);
    for _ in 0..pace::MISSES {
        assert!(!w.polling());
        w.wait().await;
        w.found(true);
    }
    assert!(w.polling());
    let t0 = tokio::time::Instant::now();
    w.wait().await;
    assert_eq!(t0.elapsed(), Duration::from_millis(25));
}

#[tokio::test]
async fn a_directory_made_later_is_watched_from_then_on() {
    let dir = tempfile::tempdir().unwrap();
    let later = dir.path().join("status");
    let watch = os_watch(Periods {
        fallback: Duration::from_millis(20),
        poll: Duration::from_millis(5),
    });
    let mut w = watch.wake_on(&[later.join("stdout")]);
    assert!(w.polling());
    std::fs::create_dir(&later).unwrap();
    let deadline = std::time::Instant::now() + WAIT;
    while w.polling() {
        assert!(std::time::Instant::now() < deadline, "never watched");
        w.wait().await;
    }
    assert_eq!(watch.watched_dirs(), 1);
}
