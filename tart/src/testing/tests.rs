//! MemTart unit tests.

use super::*;
use crate::{RunOpts, RunningVm, Tart};

fn vm(s: &str) -> VmName {
    VmName::new(s).unwrap()
}

#[tokio::test(start_paused = true)]
async fn scripted_failure_is_returned_once_after_latency() {
    let t = MemTart::new();
    t.fail(Op::Pull, ErrorKind::Network);
    t.set_latency(Op::Pull, Duration::from_secs(30));
    let start = tokio::time::Instant::now();
    assert_eq!(
        t.pull("ghcr.io/a/b:1", None).await.unwrap_err().kind,
        ErrorKind::Network
    );
    assert_eq!(start.elapsed(), Duration::from_secs(30));
    t.pull("ghcr.io/a/b:1", None).await.unwrap();
    assert!(t.is_cached("ghcr.io/a/b:1"));
    assert_eq!(t.calls_of(Op::Pull).len(), 2);
}

fn run_opts() -> RunOpts {
    RunOpts {
        dirs: vec![],
        network: Default::default(),
        root_disk: Default::default(),
        suspendable: false,
        log_path: "/dev/null".into(),
        log_cap_bytes: 0,
        start_window: Duration::ZERO,
    }
}

#[tokio::test]
async fn triggered_exit_reaches_waiters_and_frees_the_vm() {
    let t = MemTart::new().with_vm("a");
    let opts = run_opts();
    let h = t.run(&vm("a"), &opts).await.unwrap();
    assert_eq!(
        t.delete(&vm("a")).await.unwrap_err().kind,
        ErrorKind::LockBusy
    );
    assert!(t.exit_vm(&vm("a"), 1));
    assert_eq!(h.wait().await.code, Some(1));
    assert!(!h.is_alive());
    t.delete(&vm("a")).await.unwrap();
    assert!(t.vm_names().is_empty());
}

#[tokio::test]
async fn registry_restricts_pullable_images() {
    let t = MemTart::new().with_registry(["ghcr.io/a/b:1"]);
    assert_eq!(
        t.clone_vm("ghcr.io/a/c:1", &vm("x"), None)
            .await
            .unwrap_err()
            .kind,
        ErrorKind::NotFound
    );
    t.clone_vm("ghcr.io/a/b:1", &vm("x"), None).await.unwrap();
    assert_eq!(t.vm_names(), ["x"]);
}

#[tokio::test]
async fn stop_outcome_is_scriptable_and_attach_is_recorded_apart() {
    let t = MemTart::new().with_vm("a");
    let opts = run_opts();
    let h = t.run(&vm("a"), &opts).await.unwrap();
    let again = t.attach(&vm("a"), &opts).await.unwrap().expect("running");
    assert!(again.adopted());
    assert_eq!(t.attach_calls(), ["a"]);
    assert_eq!(t.calls_of(Op::Run), ["a"]);
    t.set_stop_outcome(StopOutcome::Killed);
    assert_eq!(
        t.stop(&h, Duration::from_secs(1)).await.unwrap(),
        StopOutcome::Killed
    );
    assert_eq!(again.wait().await.reason, ExitReason::Signaled);
    assert!(t.attach(&vm("a"), &opts).await.unwrap().is_none());
}
