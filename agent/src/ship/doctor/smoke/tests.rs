use std::time::Duration;

use tart::ExecOutput;

use super::launcher::launcher_detail;
use super::steps::{
    COMMAND_LINE, EXEC_LINE, EXPECTED_EXIT, NO_MARKER_EXIT, Outcome, Report, Sequence, Step,
    Verdict, check_command, check_exec, command_argv, exec_argv, vm_name, with_launcher_log,
};
use super::table::{duration, json_lines, render};
use crate::config::LauncherMode;
use crate::guest_contract::deliver::Delivered;
use crate::guest_contract::status::GuestEnd;

fn report(step: Step, outcome: Outcome, ms: u64, detail: &str) -> Report {
    Report {
        step,
        outcome,
        took: Duration::from_millis(ms),
        detail: detail.to_owned(),
    }
}

fn end(code: Option<i32>, state: Option<&str>) -> GuestEnd {
    GuestEnd {
        exit_code: code,
        state: state.map(str::to_owned),
        ..GuestEnd::default()
    }
}

/// Rows of (step, outcome), the verdict they give and its exit code.
type VerdictCase<'a> = (&'a [(Step, Outcome)], Verdict, u8);

#[test]
fn verdict_names_the_first_step_that_did_not_pass() {
    use Outcome::*;
    let cases: &[VerdictCase<'_>] = &[
        (&[(Step::Image, Ok), (Step::Delete, Ok)], Verdict::Passed, 0),
        (
            &[
                (Step::Image, Ok),
                (Step::Clone, Failed),
                (Step::Set, Skipped),
                (Step::Delete, Ok),
            ],
            Verdict::Failed(Step::Clone),
            1,
        ),
        (
            &[
                (Step::Boot, Interrupted),
                (Step::Exec, Skipped),
                (Step::Stop, Failed),
            ],
            Verdict::Interrupted(Step::Boot),
            130,
        ),
        (
            &[
                (Step::Command, Ok),
                (Step::Stop, Ok),
                (Step::Delete, Failed),
            ],
            Verdict::Failed(Step::Delete),
            1,
        ),
        (&[(Step::Exec, Skipped)], Verdict::Passed, 0),
    ];
    for (rows, want, code) in cases {
        let reports: Vec<Report> = rows.iter().map(|(s, o)| report(*s, *o, 1, "")).collect();
        let got = Verdict::of(&reports);
        assert_eq!(got, *want, "{rows:?}");
        assert_eq!(got.exit_code(), *code, "{rows:?}");
    }
    assert_eq!(
        Verdict::Failed(Step::Command).summary(),
        "smoke test failed at step command"
    );
    assert_eq!(
        Verdict::Interrupted(Step::Boot).summary(),
        "smoke test interrupted at step boot"
    );
}

#[test]
fn only_stop_and_delete_are_the_cleanup_and_they_come_last() {
    let cleanup: Vec<Step> = Step::ALL.into_iter().filter(|s| s.is_cleanup()).collect();
    assert_eq!(cleanup, [Step::Stop, Step::Delete]);
    assert_eq!(&Step::ALL[8..], &[Step::Stop, Step::Delete]);
    let names: Vec<&str> = Step::ALL.iter().map(|s| s.as_str()).collect();
    assert_eq!(
        names,
        [
            "image", "clone", "set", "guest", "boot", "launcher", "exec", "command", "stop",
            "delete"
        ],
        "the launcher is waited for after boot, before exec and the command"
    );
}

/// The steps that run, and each skipped step's detail, when `bad` ends with `outcome` (and
/// every other step that runs passes, except the clean-up's own `cleanup_fails`).
fn sequence(bad: Option<(Step, Outcome)>, cleanup_fails: Option<Step>) -> Vec<(Step, String)> {
    let mut seq = Sequence::default();
    let mut out = vec![];
    for step in Step::ALL {
        if let Some(r) = seq.skip(step) {
            out.push((step, format!("skipped: {}", r.detail)));
            continue;
        }
        let outcome = match bad {
            Some((s, o)) if s == step => o,
            _ if cleanup_fails == Some(step) => Outcome::Failed,
            _ => Outcome::Ok,
        };
        seq.ended(step, outcome);
        out.push((step, outcome.as_str().to_owned()));
    }
    out
}

/// The step that does not pass and how, a clean-up step that fails too, the rows expected.
type SequenceCase<'a> = (Option<(Step, Outcome)>, Option<Step>, &'a [&'a str]);

#[test]
fn after_a_failure_the_rest_is_skipped_and_the_cleanup_still_runs() {
    let ran = |rows: &[(Step, String)]| -> Vec<String> {
        rows.iter()
            .map(|(s, r)| format!("{} {r}", s.as_str()))
            .collect()
    };
    let all_ok = sequence(None, None);
    assert!(all_ok.iter().all(|(_, r)| r == "ok"), "{all_ok:?}");
    let cases: &[SequenceCase<'_>] = &[
        (
            Some((Step::Clone, Outcome::Failed)),
            None,
            &[
                "image ok",
                "clone failed",
                "set skipped: clone failed",
                "guest skipped: clone failed",
                "boot skipped: clone failed",
                "launcher skipped: clone failed",
                "exec skipped: clone failed",
                "command skipped: clone failed",
                "stop ok",
                "delete ok",
            ],
        ),
        (
            Some((Step::Exec, Outcome::Interrupted)),
            None,
            &[
                "image ok",
                "clone ok",
                "set ok",
                "guest ok",
                "boot ok",
                "launcher ok",
                "exec interrupted",
                "command skipped: interrupted",
                "stop ok",
                "delete ok",
            ],
        ),
        (
            // A failed stop does not keep the delete from trying.
            Some((Step::Command, Outcome::Failed)),
            Some(Step::Stop),
            &[
                "image ok",
                "clone ok",
                "set ok",
                "guest ok",
                "boot ok",
                "launcher ok",
                "exec ok",
                "command failed",
                "stop failed",
                "delete ok",
            ],
        ),
        (
            // No launcher: nothing in the guest runs the command, so neither exec nor
            // command is tried, and the running VM is stopped.
            Some((Step::Launcher, Outcome::Failed)),
            None,
            &[
                "image ok",
                "clone ok",
                "set ok",
                "guest ok",
                "boot ok",
                "launcher failed",
                "exec skipped: launcher failed",
                "command skipped: launcher failed",
                "stop ok",
                "delete ok",
            ],
        ),
    ];
    for (bad, cleanup_fails, want) in cases {
        assert_eq!(ran(&sequence(*bad, *cleanup_fails)), *want, "{bad:?}");
    }
}

#[test]
fn command_check_reads_the_exit_code_and_the_line() {
    let line = format!("{COMMAND_LINE}\n");
    let cases: &[(GuestEnd, &str, Result<&str, &str>)] = &[
        (
            end(Some(EXPECTED_EXIT), Some("exited")),
            &line,
            Ok("exit code 42"),
        ),
        (
            end(Some(0), Some("exited")),
            &line,
            Err("exit code 0 (expected 42)"),
        ),
        (
            end(Some(NO_MARKER_EXIT), Some("exited")),
            &line,
            Err("never saw the exec's marker"),
        ),
        (
            end(Some(EXPECTED_EXIT), Some("exited")),
            "something else\n",
            Err("lacks"),
        ),
        (
            end(None, Some("failed")),
            "",
            Err("no exit code (status share state: failed)"),
        ),
        (end(None, None), "", Err("state: none")),
    ];
    for (e, stdout, want) in cases {
        let got = check_command(e, stdout);
        match (want, &got) {
            (Ok(w), Ok(g)) | (Err(w), Err(g)) => assert!(g.contains(w), "{e:?}: {got:?}"),
            _ => panic!("{e:?} {stdout:?}: got {got:?}, want {want:?}"),
        }
    }
}

#[test]
fn exec_check_wants_exit_0_and_its_line() {
    let out = |code, stdout: &str, stderr: &str| ExecOutput {
        exit_code: code,
        stdout: stdout.into(),
        stderr: stderr.into(),
    };
    let ok = format!("{EXEC_LINE}\n");
    assert!(check_exec(&out(0, &ok, "")).is_ok());
    let e = check_exec(&out(1, "", "Error: no agent\nmore")).unwrap_err();
    assert_eq!(e, "exit code 1 (expected 0): Error: no agent");
    assert!(
        check_exec(&out(0, "other\n", ""))
            .unwrap_err()
            .contains("lacks")
    );
}

#[test]
fn the_marker_is_an_argument_never_part_of_a_script() {
    let marker = "/tmp/a b'$(x).smoke";
    for argv in [command_argv(marker), exec_argv(marker)] {
        assert_eq!(&argv[..2], ["/bin/sh", "-c"]);
        assert!(!argv[2].contains(marker));
        assert_eq!(&argv[3..], ["sh", marker]);
    }
    let script = &command_argv(marker)[2];
    assert!(script.contains("exit 42"), "{script}");
    assert!(script.contains("$TART_KUBELET_SMOKE_LINE"), "{script}");
}

#[test]
fn the_vm_is_named_with_the_prefix_and_a_smoke_marker() {
    assert_eq!(
        vm_name("tkl-", "0a1b2c3d").unwrap().as_str(),
        "tkl-smoke-0a1b2c3d"
    );
    assert!(vm_name("tkl/", "x").is_err());
}

#[test]
fn the_table_aligns_columns_like_kubectl() {
    let reports = [
        report(Step::Image, Outcome::Ok, 12, "a local VM"),
        report(
            Step::Command,
            Outcome::Failed,
            61_500,
            "exit code 0 (expected 42)",
        ),
        report(Step::Delete, Outcome::Skipped, 0, ""),
    ];
    let want = "\
STEP      RESULT    TIME   DETAIL
image     ok        12ms   a local VM
command   failed    1m1s   exit code 0 (expected 42)
delete    skipped   0ms
";
    assert_eq!(render(&reports), want);
}

#[test]
fn durations_read_like_kubectl() {
    let cases = [
        (0, "0ms"),
        (999, "999ms"),
        (1_000, "1.0s"),
        (12_345, "12.3s"),
        (125_000, "2m5s"),
        (3_720_000, "1h2m"),
    ];
    for (ms, want) in cases {
        assert_eq!(duration(Duration::from_millis(ms)), want, "{ms} ms");
    }
}

#[test]
fn json_has_one_object_per_step() {
    let out = json_lines(&[report(
        Step::Boot,
        Outcome::Interrupted,
        1_500,
        "interrupted",
    )]);
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["step"], "boot");
    assert_eq!(v["result"], "interrupted");
    assert_eq!(v["seconds"], 1.5);
    assert_eq!(v["detail"], "interrupted");
}

#[test]
fn a_failure_quotes_the_launchers_last_message_printable_and_bounded() {
    let cases = [
        ("", "x"),
        ("\n  \n", "x"),
        (
            "waiting for shares\ngave up: no control share\n",
            "x; launcher.log: gave up: no control share",
        ),
        ("bad \x1b[31mred\x07\n", "x; launcher.log: bad [31mred"),
    ];
    for (log, want) in cases {
        assert_eq!(with_launcher_log("x".into(), log), want, "{log:?}");
    }
    let long = "a".repeat(1000);
    assert_eq!(
        with_launcher_log("x".into(), &long).len(),
        "x; launcher.log: ".len() + 200
    );
}

#[test]
fn the_launcher_detail_says_whose_launcher_reported_and_when() {
    let d = Duration::from_millis(4200);
    let cases = [
        (
            Some(Delivered::Installed),
            LauncherMode::Auto,
            "the shipped launcher, delivered through the Tart Guest Agent, reported 4.2s after tart run (launcher mode auto)",
        ),
        (
            Some(Delivered::ImageHasOne),
            LauncherMode::Auto,
            "the image's own launcher reported 4.2s after tart run (launcher mode auto)",
        ),
        (
            None,
            LauncherMode::Baked,
            "the image's own launcher reported 4.2s after tart run (launcher mode baked)",
        ),
        (
            Some(Delivered::Installed),
            LauncherMode::Deliver,
            "the shipped launcher, delivered through the Tart Guest Agent, reported 4.2s after tart run (launcher mode deliver)",
        ),
    ];
    for (delivered, mode, want) in cases {
        assert_eq!(
            launcher_detail(delivered, mode, d),
            want,
            "{delivered:?} {mode:?}"
        );
    }
}
