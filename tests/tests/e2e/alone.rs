//! Running one test in a process of its own.
//!
//! Every test of this binary runs in one process, concurrently with the others. A test that
//! counts what belongs to the whole process (its open descriptors, its child processes) would
//! count the other tests' too, so it runs itself again as a child process that runs that test
//! alone: `<this binary> <name> --exact --test-threads=1` with [`ENV`] set to its name.

use std::time::Duration;

/// Set, in the child process, to the name of the test it runs alone.
const ENV: &str = "TART_KUBELET_E2E_ALONE";

/// How long the child process may take.
const DEADLINE: Duration = Duration::from_secs(600);

/// Whether the calling test is in its own process. If not, runs it in a child process, asserts
/// that exactly that test ran there and passed, prints the child's output and returns `false`:
/// the caller returns at once.
///
/// The test's name (its full path without the crate, e.g.
/// `tart_leaks::thousand_kill_and_retry_cycles_leak_nothing`) is the name libtest gives the
/// thread it runs the test on, so the child always runs the caller and no other test. Call it
/// from the test's own body, which runs on that thread, not from a spawned task.
pub(crate) async fn in_own_process() -> bool {
    let current = std::thread::current();
    let name = current
        .name()
        .filter(|n| n.contains("::"))
        .expect("alone::in_own_process called outside a test's own thread");
    if std::env::var_os(ENV).is_some_and(|v| v == name) {
        return true;
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let run = tokio::process::Command::new(exe)
        .args([name, "--exact", "--test-threads=1", "--nocapture"])
        .env(ENV, name)
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(DEADLINE, run)
        .await
        .unwrap_or_else(|_| panic!("{name} alone: no result within {DEADLINE:?}"))
        .expect("run the test binary again");
    let stdout = String::from_utf8_lossy(&out.stdout);
    print!("{stdout}");
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{name} alone: {}", out.status);
    assert!(
        // libtest's line for the test; its `ok` comes after whatever the test printed.
        stdout.contains(&format!("test {name} ... "))
            && stdout.contains("test result: ok. 1 passed"),
        "{name} alone: the child process did not run exactly that test"
    );
    false
}
