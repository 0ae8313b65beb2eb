//! `tart run` process handling and the stop sequence, exercised with small `sh` programs.

use std::time::Duration;

use nix::{
    sys::signal::{Signal, kill},
    unistd::{Pid, getsid},
};

use super::*;
use crate::{Network, RunningVm, StopOutcome, stop::stop_sequence};

fn opts(dir: &Path, window_ms: u64) -> RunOpts {
    RunOpts {
        dirs: vec![],
        network: Network::Shared,
        root_disk: Default::default(),
        suspendable: false,
        log_path: dir.join("logs/vm.log"),
        log_cap_bytes: 1 << 20,
        start_window: Duration::from_millis(window_ms),
    }
}

async fn start(script: &str, o: &RunOpts) -> Result<VmProcess> {
    let vm = VmName::new("vm-a").unwrap();
    let launch = Launch {
        vm: &vm,
        program: Path::new("/bin/sh"),
        args: vec!["-c".into(), script.into()],
        env: &[],
        env_clear: false,
        opts: o,
    };
    tokio::time::timeout(Duration::from_secs(10), spawn(launch))
        .await
        .expect("spawn returned")
}

/// What `tart stop` says about a VM it cannot see (docs/reference/tart-cli.md §2.7).
fn not_running() -> Error {
    Error::new(
        Op::Stop,
        ErrorKind::NotRunning,
        None,
        "VM \"vm-a\" is not running",
    )
}

async fn poll_log(path: &Path, needle: &str) {
    let until = tokio::time::Instant::now() + Duration::from_secs(5);
    while !std::fs::read_to_string(path)
        .unwrap_or_default()
        .contains(needle)
    {
        assert!(
            tokio::time::Instant::now() < until,
            "log never contained {needle:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn run_is_detached_in_its_own_session_and_logs_to_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let o = opts(dir.path(), 100);
    let vm = start("echo hello; echo oops >&2; exec sleep 30", &o)
        .await
        .unwrap();
    let p = Pid::from_raw(vm.pid() as i32);
    assert_eq!(getsid(Some(p)).unwrap(), p, "session leader");
    assert_ne!(getsid(None).unwrap(), p);
    assert!(vm.is_alive());
    poll_log(&o.log_path, "hello").await;
    poll_log(&o.log_path, "oops").await;
    signal::kill_leader(vm.pid());
    let exit = tokio::time::timeout(Duration::from_secs(5), vm.wait())
        .await
        .unwrap();
    assert_eq!(exit.reason, ExitReason::Signaled);
    assert_eq!(exit.signal, Some(9));
    assert!(!vm.is_alive());
}

#[tokio::test]
async fn early_exit_is_classified_from_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let o = opts(dir.path(), 3000);
    std::fs::create_dir_all(o.log_path.parent().unwrap()).unwrap();
    // An earlier run's failure in the same log must not be picked up.
    std::fs::write(&o.log_path, "Failed to lock auxiliary storage.\n").unwrap();
    let err = start(
        "echo 'The number of VMs exceeds the system limit (other running VMs: a, b)' >&2; exit 1",
        &o,
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::VmLimit);
    assert_eq!(err.exit_code, Some(1));

    let err = start("echo 'VM \"vm-a\" is already running!' >&2; exit 2", &o)
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::AlreadyRunning);
}

#[tokio::test]
async fn missing_program_is_a_spawn_error() {
    let dir = tempfile::tempdir().unwrap();
    let o = opts(dir.path(), 100);
    let vm = VmName::new("vm-a").unwrap();
    let err = spawn(Launch {
        vm: &vm,
        program: Path::new("/nonexistent/tart"),
        args: vec![],
        env: &[],
        env_clear: false,
        opts: &o,
    })
    .await
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Spawn);
    assert!(std::error::Error::source(&err).is_some());
}

#[tokio::test]
async fn clean_exit_inside_the_window_is_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let vm = start("exit 0", &opts(dir.path(), 2000)).await.unwrap();
    assert!(!vm.is_alive());
    assert_eq!(
        vm.wait_for(Duration::ZERO).await.unwrap().reason,
        ExitReason::Completed
    );
}

#[tokio::test]
async fn exit_after_the_window_reaches_every_waiter() {
    let dir = tempfile::tempdir().unwrap();
    let vm = start("sleep 0.5; exit 3", &opts(dir.path(), 50))
        .await
        .unwrap();
    assert!(vm.is_alive());
    let (a, b) = (vm.clone(), vm.clone());
    let waiters = futures_like_join(a, b);
    let (x, y) = tokio::time::timeout(Duration::from_secs(5), waiters)
        .await
        .unwrap();
    assert_eq!(x.reason, ExitReason::Failed);
    assert_eq!(x.code, Some(3));
    assert_eq!(x, y);
    // Resolves at once afterwards.
    assert_eq!(vm.wait_for(Duration::from_millis(10)).await, Some(x));
}

async fn futures_like_join(a: VmProcess, b: VmProcess) -> (ExitInfo, ExitInfo) {
    let ta = tokio::spawn(async move { a.wait().await });
    let tb = tokio::spawn(async move { b.wait().await });
    (ta.await.unwrap(), tb.await.unwrap())
}

// Each stand-in says `traps-set` once its traps are in place: a signal sent before that would
// meet `sh`'s default action instead (see `start_trapping`). They idle in the `wait` builtin,
// which a trapped signal interrupts at once (POSIX), so handling a signal needs no new process
// however loaded the machine is; a handler that exits ends its `sleep` first.
const GUEST_OBEYS_USR2: &str = "trap 'echo \"guest has stopped the virtual machine\"; kill $! 2>/dev/null; exit 0' USR2; echo traps-set; while :; do sleep 60 & wait $!; done";
const OBEYS_INT_ONLY: &str = "trap '' USR2; trap 'echo \"Stopping VM...\"; kill $! 2>/dev/null; exit 0' INT; echo traps-set; while :; do sleep 60 & wait $!; done";
const IGNORES_ALL: &str = "trap '' USR2 INT; echo traps-set; while :; do sleep 60 & wait $!; done";

/// `start`, then wait until the stand-in has set its traps (it logs `traps-set`), so the stop
/// sequence meets the stand-in's signal handling however slowly the machine runs it.
async fn start_trapping(script: &str, dir: &Path) -> VmProcess {
    let o = opts(dir, 100);
    let vm = start(script, &o).await.unwrap();
    poll_log(&o.log_path, "traps-set").await;
    vm
}

#[tokio::test]
async fn stop_ends_with_guest_shutdown_when_the_guest_obeys() {
    let dir = tempfile::tempdir().unwrap();
    let vm = start_trapping(GUEST_OBEYS_USR2, dir.path()).await;
    let out = stop_sequence(&vm, Duration::from_secs(8), |_| async {
        panic!("tart stop must not run")
    })
    .await
    .unwrap();
    assert_eq!(out, StopOutcome::GuestShutdown);
    assert_eq!(vm.wait_for(Duration::ZERO).await.unwrap().code, Some(0));
}

#[tokio::test]
async fn stop_falls_back_to_tart_stop() {
    let dir = tempfile::tempdir().unwrap();
    let vm = start_trapping(OBEYS_INT_ONLY, dir.path()).await;
    let pid = vm.pid();
    let t0 = tokio::time::Instant::now();
    let out = stop_sequence(&vm, Duration::from_millis(800), |timeout| async move {
        assert_eq!(timeout, Duration::from_secs(1)); // 200 ms reserve, rounded up
        let _ = kill(Pid::from_raw(pid as i32), Signal::SIGINT);
        Ok(())
    })
    .await
    .unwrap();
    assert_eq!(out, StopOutcome::TartStop);
    assert!(
        t0.elapsed() >= Duration::from_millis(600),
        "guest got its time"
    );
}

#[tokio::test]
async fn stop_signals_a_starting_vm_itself_when_tart_stop_sees_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let vm = start_trapping(OBEYS_INT_ONLY, dir.path()).await;
    let out = stop_sequence(&vm, Duration::from_millis(400), |_| async {
        Err(not_running())
    })
    .await
    .unwrap();
    assert_eq!(out, StopOutcome::TartStop);
}

#[tokio::test]
async fn stop_kills_a_vm_that_ignores_everything() {
    let dir = tempfile::tempdir().unwrap();
    let vm = start_trapping(IGNORES_ALL, dir.path()).await;
    let out = stop_sequence(&vm, Duration::from_millis(400), |_| async {
        Err(not_running())
    })
    .await
    .unwrap();
    assert_eq!(out, StopOutcome::Killed);
    assert_eq!(
        vm.wait_for(Duration::ZERO).await.unwrap().reason,
        ExitReason::Signaled
    );
}

#[tokio::test]
async fn stop_of_an_exited_vm_is_already_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let vm = start("exit 0", &opts(dir.path(), 1000)).await.unwrap();
    let out = stop_sequence(&vm, Duration::from_secs(1), |_| async {
        panic!("no tart stop")
    })
    .await
    .unwrap();
    assert_eq!(out, StopOutcome::AlreadyStopped);
}

#[test]
fn log_over_cap_keeps_its_last_half() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("vm.log");
    let data: Vec<u8> = (0..1000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(&p, &data).unwrap();
    assert!(!cap_log(&p, 2000).unwrap());
    assert!(cap_log(&p, 400).unwrap());
    assert_eq!(std::fs::read(&p).unwrap(), &data[800..]);
}

#[test]
fn read_tail_starts_at_the_offset() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("vm.log");
    std::fs::write(&p, b"old\nnew \xff\n").unwrap();
    assert_eq!(read_tail(&p, Some(4)), "new \u{fffd}\n");
    assert_eq!(read_tail(&p, Some(999)), "old\nnew \u{fffd}\n");
    assert_eq!(read_tail(&dir.path().join("missing"), None), "");
}

#[test]
fn adopted_exit_is_inferred_from_the_log() {
    assert_eq!(
        infer_exit("booting\nguest has stopped the virtual machine\n").reason,
        ExitReason::Completed
    );
    assert_eq!(infer_exit("Stopping VM...\n").code, Some(0));
    assert_eq!(infer_exit("whatever\n").reason, ExitReason::Unknown);
}

#[test]
fn unlocked_or_missing_config_has_no_holder() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("config.json");
    assert_eq!(lock_holder(&p).unwrap(), None);
    std::fs::write(&p, "{}").unwrap();
    assert_eq!(lock_holder(&p).unwrap(), None);
}
