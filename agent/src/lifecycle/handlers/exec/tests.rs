use std::sync::Arc;

use tart::{Op, testing::MemTart};

use super::*;

fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| (*w).to_owned()).collect()
}

fn exited(code: i32, stdout: &str, stderr: &str) -> tart::Result<ExecOutput> {
    Ok(ExecOutput {
        exit_code: code,
        stdout: stdout.into(),
        stderr: stderr.into(),
    })
}

fn failed(kind: ErrorKind, message: &str) -> tart::Result<ExecOutput> {
    Err(tart::Error::new(Op::Exec, kind, Some(1), message))
}

#[test]
fn each_tart_exec_result_maps_to_kubelets_outcome() {
    let cmd = argv(&["sh", "-c", "curl -f localhost"]);
    let unreachable = "Failed to connect to the VM using its control socket: \
                           GRPCConnectionPoolError, is the Tart Guest Agent running?";
    let cases = [
        (exited(0, "ok\n", ""), Outcome::Success),
        (exited(0, "", "warn\n"), Outcome::Success),
        (
            exited(7, "out\n", "err\n"),
            Outcome::Failure("out\nerr\n".into()),
        ),
        (exited(1, "", ""), Outcome::Failure(String::new())),
        (
            failed(ErrorKind::Timeout, "deadline of 1s passed"),
            Outcome::Failure("command \"sh -c curl -f localhost\" timed out".into()),
        ),
        (
            failed(ErrorKind::Other, unreachable),
            Outcome::Failure(unreachable.into()),
        ),
        (
            failed(ErrorKind::NotRunning, "VM \"x\" is not running"),
            Outcome::Error("tart exec failed (not_running): VM \"x\" is not running".into()),
        ),
        (
            failed(ErrorKind::NotFound, "the specified VM \"x\" does not exist"),
            Outcome::Error(
                "tart exec failed (not_found): the specified VM \"x\" does not exist".into(),
            ),
        ),
        (
            failed(ErrorKind::Spawn, "cannot start tart"),
            Outcome::Error("tart exec failed (spawn): cannot start tart".into()),
        ),
    ];
    for (result, want) in cases {
        let shown = format!("{result:?}");
        assert_eq!(outcome(&cmd, result.into()), want, "{shown}");
    }
}

#[test]
fn failure_output_is_cut_to_ten_kib_on_a_char_boundary() {
    let long = "é".repeat(MAX_OUTPUT); // 2 bytes each
    let Outcome::Failure(text) = outcome(&argv(&["x"]), exited(1, &long, "tail").into()) else {
        panic!("not a failure")
    };
    assert_eq!(text.len(), MAX_OUTPUT);
    assert!(!text.contains("tail"));
}

fn run_opts() -> tart::RunOpts {
    tart::RunOpts {
        dirs: vec![],
        network: tart::Network::Shared,
        root_disk: Default::default(),
        suspendable: false,
        log_path: "/dev/null".into(),
        log_cap_bytes: 1 << 20,
        start_window: Duration::ZERO,
    }
}

fn running_vm() -> (Arc<MemTart>, VmName) {
    let vm = VmName::new("tk-probe").unwrap();
    let tart = Arc::new(MemTart::new().with_vm(vm.as_str()));
    (tart, vm)
}

#[tokio::test(start_paused = true)]
async fn the_guest_commands_exit_code_decides() {
    let (tart, vm) = running_vm();
    tart.run(&vm, &run_opts()).await.unwrap();
    let cmd = argv(&["test", "-f", "/ready"]);
    assert_eq!(
        check(&*tart, &vm, &cmd, Duration::from_secs(1)).await,
        Outcome::Success
    );
    tart.set_exec_output(ExecOutput {
        exit_code: 1,
        stdout: String::new(),
        stderr: "no file\n".into(),
    });
    assert_eq!(
        check(&*tart, &vm, &cmd, Duration::from_secs(1)).await,
        Outcome::Failure("no file\n".into())
    );
    assert_eq!(tart.calls_of(Op::Exec), ["tk-probe", "tk-probe"]);
}

#[tokio::test(start_paused = true)]
async fn a_slow_guest_command_fails_at_the_timeout() {
    let (tart, vm) = running_vm();
    tart.run(&vm, &run_opts()).await.unwrap();
    tart.set_latency(Op::Exec, Duration::from_secs(30));
    let started = tokio::time::Instant::now();
    let got = check(&*tart, &vm, &argv(&["sleep", "30"]), Duration::from_secs(2)).await;
    assert_eq!(
        got,
        Outcome::Failure("command \"sleep 30\" timed out".into())
    );
    assert_eq!(started.elapsed(), Duration::from_secs(2));
}

#[tokio::test(start_paused = true)]
async fn a_stopped_vm_is_an_error_not_a_failure() {
    let (tart, vm) = running_vm(); // cloned, never started
    let got = check(&*tart, &vm, &argv(&["true"]), Duration::from_secs(1)).await;
    assert!(
        matches!(got, Outcome::Error(ref m) if m.contains("not running")),
        "{got:?}"
    );
}
