use super::*;
use std::time::Instant;

#[test]
fn stdout_of_a_successful_command_is_returned() {
    let out = run(
        "sh",
        &["-c", "printf 'hw.ncpu: 10\\n'"],
        Duration::from_secs(10),
    )
    .unwrap();
    assert_eq!(out, "hw.ncpu: 10\n");
}

#[test]
fn a_hung_command_is_killed_at_its_deadline() {
    let t = Instant::now();
    let e = run("sh", &["-c", "exec sleep 30"], Duration::from_millis(300)).unwrap_err();
    assert!(matches!(e, ShellError::Timeout { .. }), "{e}");
    assert!(t.elapsed() < Duration::from_secs(10));
}

#[test]
fn a_failing_command_reports_code_and_first_stderr_line() {
    let e = run(
        "sh",
        &["-c", "echo 'Could not print domain: 125' >&2; exit 113"],
        Duration::from_secs(10),
    )
    .unwrap_err();
    match e {
        ShellError::Failed { code, stderr, .. } => {
            assert_eq!(code, Some(113));
            assert_eq!(stderr, "Could not print domain: 125");
        }
        other => panic!("{other}"),
    }
}

#[test]
fn a_missing_program_is_a_spawn_error() {
    let e = run("/nonexistent/sysctl", &[], Duration::from_secs(1)).unwrap_err();
    assert!(matches!(e, ShellError::Spawn { .. }));
}
