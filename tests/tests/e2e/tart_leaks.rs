//! 1,000 kill-and-retry cycles against fake-tart leave no processes, no zombies and no open
//! file descriptors behind. The test runs in a process of its own (`crate::alone`) so that the
//! descriptor and child counts of its process are not disturbed by other tests.
//!
//! Run with `--nocapture` to see the figures.

use crate::{alone, tart_support};

use std::time::Duration;

use futures::{StreamExt, stream};
use serde_json::json;
use tart::{AttemptOutcome, ErrorKind, Tart};
use tart_support::{
    Home, Recorder, deadlines, fast_retry, open_fds, poll, procs, procs_of_home, vm,
};

/// Calls made; each is two attempts killed at their deadline with one retry in between.
const CALLS: usize = 1000;
const CONCURRENCY: usize = 4;

fn children_of_self() -> Vec<tart_support::Proc> {
    let me = std::process::id();
    procs().into_iter().filter(|p| p.ppid == me).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousand_kill_and_retry_cycles_leak_nothing() {
    if !alone::in_own_process().await {
        return;
    }
    let home = Home::new();
    home.knobs(json!({
        "rules": [{"op": "get", "vm": "hang-*", "action": {"hang": true}}]
    }));
    let rec = Recorder::new();
    let cli = home
        .cli()
        .deadlines(deadlines(Duration::from_millis(40)))
        .retry(fast_retry(2))
        .observer(rec.clone())
        .build();
    let name = vm("hang-forever");

    // Warm-up: the first child makes tokio open its signal/process-driver descriptors.
    let e = cli.get(&name).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Timeout);
    let fds_before = open_fds();
    let children_before = children_of_self().len();

    let start = std::time::Instant::now();
    let kinds: Vec<ErrorKind> = stream::iter(0..CALLS)
        .map(|_| {
            let (cli, name) = (cli.clone(), name.clone());
            async move {
                tokio::time::timeout(Duration::from_secs(30), cli.get(&name))
                    .await
                    .expect("a killed call returns")
                    .unwrap_err()
                    .kind
            }
        })
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await;
    let elapsed = start.elapsed();
    assert!(kinds.iter().all(|k| *k == ErrorKind::Timeout));

    let attempts = rec.attempts();
    let killed = attempts.iter().filter(|a| a.killed).count();
    let retried = attempts.iter().filter(|a| a.will_retry).count();
    assert_eq!(killed, 2 * (CALLS + 1));
    assert_eq!(retried, CALLS + 1);
    assert!(
        attempts
            .iter()
            .all(|a| a.outcome == AttemptOutcome::Error(ErrorKind::Timeout))
    );

    // Nothing left: no fake-tart of this home, no child (zombie or not), no descriptor.
    let leftover = poll(Duration::from_secs(5), "processes to be gone", || {
        let c = children_of_self();
        (c.len() <= children_before && procs_of_home(home.path()).is_empty()).then_some(c)
    })
    .await;
    assert!(
        leftover.iter().all(|p| p.state != 'Z'),
        "zombies: {leftover:?}"
    );
    let fds_after = poll(Duration::from_secs(5), "descriptors to be closed", || {
        let n = open_fds();
        (n <= fds_before).then_some(n)
    })
    .await;
    println!(
        "kill-and-retry: {CALLS} calls, {retried} retries, {killed} kills in {:.1} s \
         ({:.1} ms per kill, concurrency {CONCURRENCY}); fds {fds_before} -> {fds_after}; \
         children {children_before} -> {}",
        elapsed.as_secs_f64(),
        elapsed.as_secs_f64() * 1000.0 / killed as f64,
        leftover.len()
    );
}
