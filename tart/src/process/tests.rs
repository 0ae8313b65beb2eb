//! Process handling tests with small `sh` programs.

use std::{path::PathBuf, time::Duration};

use super::*;
use crate::deadlines::SizeDeadline;

fn sh() -> PathBuf {
    PathBuf::from("/bin/sh")
}

fn args(script: &str) -> Vec<OsString> {
    vec!["-c".into(), script.into()]
}

fn spec<'a>(program: &'a Path, args: &'a [OsString], deadline_ms: u64) -> Spec<'a> {
    Spec {
        program,
        args,
        env: &[],
        env_clear: false,
        deadline: Duration::from_millis(deadline_ms),
        stall: None,
        size_deadline: None,
        output_cap: DEFAULT_OUTPUT_CAP,
        inflight: None,
    }
}

/// PIDs whose process group is `pgid` (field 5 of /proc/<pid>/stat), zombies included.
pub(crate) fn group_members(pgid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // The command name may contain spaces: fields start after the last ')'.
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        let fields: Vec<&str> = rest.split(' ').collect();
        if fields[2].parse::<u32>().ok() == Some(pgid) {
            out.push(pid);
        }
    }
    out
}

async fn run_ok(s: &Spec<'_>) -> (Outcome, Vec<String>) {
    let mut lines = Vec::new();
    let o = tokio::time::timeout(
        Duration::from_secs(20),
        run(s, &mut |l| lines.push(l.to_owned())),
    )
    .await
    .expect("run returned")
    .expect("spawned");
    (o, lines)
}

#[tokio::test]
async fn exit_code_stdout_and_stderr_are_captured() {
    let (p, a) = (sh(), args("echo one; echo two >&2; printf 'three'; exit 3"));
    let (o, lines) = run_ok(&spec(&p, &a, 5000)).await;
    assert_eq!(o.code(), Some(3));
    assert_eq!(o.stdout, "one\nthree");
    assert_eq!(o.stderr, "two\n");
    assert_eq!(lines, ["one", "three"]);
}

#[tokio::test]
async fn invalid_utf8_is_decoded_lossily() {
    let (p, a) = (sh(), args("printf 'a\\377\\376b\\n'; printf '\\377x' >&2"));
    let (o, lines) = run_ok(&spec(&p, &a, 5000)).await;
    assert!(o.success());
    assert_eq!(lines, ["a\u{fffd}\u{fffd}b"]);
    assert_eq!(o.stderr, "\u{fffd}x");
}

#[tokio::test]
async fn deadline_kills_the_whole_group_and_reaps_it() {
    let (p, a) = (sh(), args("sleep 100 & sleep 100 & echo started; wait"));
    let (o, lines) = run_ok(&spec(&p, &a, 300)).await;
    assert_eq!(o.ended, Ended::Killed(Killed::Deadline));
    assert_eq!(lines, ["started"]);
    assert!(o.elapsed < Duration::from_secs(3), "{:?}", o.elapsed);
    // SIGKILL delivery to the background sleeps is asynchronous; they are orphans reaped by
    // init, so poll briefly.
    let until = std::time::Instant::now() + Duration::from_secs(5);
    while !group_members(o.pid).is_empty() {
        assert!(
            std::time::Instant::now() < until,
            "group {} still has {:?}",
            o.pid,
            group_members(o.pid)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn grandchild_holding_the_pipe_does_not_delay_the_result() {
    // `setsid` moves the grandchild out of our group, so only the drain limit saves us.
    let (p, a) = (sh(), args("setsid sleep 5 & echo done"));
    let (o, lines) = run_ok(&spec(&p, &a, 20_000)).await;
    assert!(o.success());
    assert_eq!(lines, ["done"]);
    assert!(o.elapsed < Duration::from_secs(2), "{:?}", o.elapsed);
}

#[tokio::test]
async fn stall_watchdog_kills_a_silent_pull() {
    let (p, a) = (
        sh(),
        args("echo 'pulling manifest...'; echo 40%; sleep 100"),
    );
    let mut s = spec(&p, &a, 20_000);
    s.stall = Some(Duration::from_millis(300));
    let (o, lines) = run_ok(&s).await;
    assert_eq!(o.ended, Ended::Killed(Killed::Stall));
    assert_eq!(lines, ["pulling manifest...", "40%"]);
    assert!(o.elapsed < Duration::from_secs(3));
}

#[tokio::test]
async fn waiting_for_lock_is_not_a_stall() {
    let (p, a) = (
        sh(),
        args("echo 'waiting for lock...'; sleep 1; echo 5%; echo 100%"),
    );
    let mut s = spec(&p, &a, 20_000);
    s.stall = Some(Duration::from_millis(300));
    let (o, lines) = run_ok(&s).await;
    assert!(o.success(), "{:?}", o.ended);
    assert_eq!(lines, ["waiting for lock...", "5%", "100%"]);
}

#[tokio::test]
async fn the_disk_size_line_sets_the_pull_deadline() {
    // A pull that keeps printing (no stall) but is far slower than its size allows: 0.5 GB at
    // 1 s per GB plus 0.3 s is due 0.8 s after the disk line, long before the 20 s cap.
    let (p, a) = (
        sh(),
        args("echo 'pulling disk (0.5 GB compressed)...'; while :; do echo 1%; sleep 0.1; done"),
    );
    let mut s = spec(&p, &a, 20_000);
    s.stall = Some(Duration::from_secs(5));
    s.size_deadline = Some(SizeDeadline {
        per_gb: Duration::from_secs(1),
        base: Duration::from_millis(300),
    });
    let (o, lines) = run_ok(&s).await;
    assert_eq!(o.ended, Ended::Killed(Killed::Deadline));
    assert!(o.elapsed < Duration::from_secs(3), "{:?}", o.elapsed);
    assert!(lines.len() > 2, "{lines:?}");
    // Without a size line the cap alone applies.
    let (p, a) = (sh(), args("echo 'pulling disk...'; sleep 1; echo 100%"));
    let mut s = spec(&p, &a, 20_000);
    s.size_deadline = Some(SizeDeadline {
        per_gb: Duration::from_secs(1),
        base: Duration::ZERO,
    });
    let (o, _) = run_ok(&s).await;
    assert!(o.success(), "{:?}", o.ended);
}

#[tokio::test]
async fn missing_program_is_a_spawn_error() {
    let p = PathBuf::from("/nonexistent/tart");
    let a = vec![];
    let r = run(&spec(&p, &a, 1000), &mut |_| {}).await;
    assert_eq!(r.unwrap_err().kind(), std::io::ErrorKind::NotFound);
}

#[tokio::test]
async fn environment_is_explicit() {
    let (p, a) = (sh(), args("echo \"$TART_HOME|${HOME:-none}\""));
    let env = vec![("TART_HOME".into(), "/th".into())];
    let mut s = spec(&p, &a, 5000);
    s.env = &env;
    s.env_clear = true;
    let (o, _) = run_ok(&s).await;
    assert_eq!(o.stdout, "/th|none\n");
}

#[tokio::test]
async fn dropping_the_future_kills_the_group() {
    let (p, a) = (sh(), args("echo $$; sleep 100"));
    let s = spec(&p, &a, 60_000);
    let mut pid = None;
    let mut on_line = |l: &str| pid = l.parse::<u32>().ok();
    let _ = tokio::time::timeout(Duration::from_millis(500), run(&s, &mut on_line)).await;
    let pid = pid.expect("child printed its pid");
    let until = std::time::Instant::now() + Duration::from_secs(5);
    while !group_members(pid).is_empty() {
        assert!(std::time::Instant::now() < until, "group still alive");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[test]
fn tail_buf_keeps_the_last_bytes() {
    let mut t = TailBuf::new(4);
    t.push(b"abc");
    t.push(b"def");
    assert_eq!(t.lossy(), "cdef");
}

#[test]
fn line_splitter_joins_chunks_and_trims_cr() {
    let mut s = LineSplitter::default();
    assert!(s.push(b"ab").is_empty());
    assert_eq!(s.push(b"c\r\nde\nf"), ["abc", "de"]);
    assert_eq!(s.finish().as_deref(), Some("f"));
    assert_eq!(s.finish(), None);
}

#[test]
fn line_splitter_caps_long_lines() {
    let mut s = LineSplitter::default();
    let big = vec![b'x'; MAX_LINE * 2];
    assert!(s.push(&big).is_empty());
    let l = s.push(b"\n");
    assert_eq!(l[0].len(), MAX_LINE);
}
