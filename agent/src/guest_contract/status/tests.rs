use super::*;

#[test]
fn exit_codes_parse_with_their_newline() {
    assert_eq!(parse_exit_code("3\n"), Some(3));
    assert_eq!(parse_exit_code("0"), Some(0));
    assert_eq!(parse_exit_code(""), None);
    assert_eq!(parse_exit_code("x\n"), None);
}

#[test]
fn the_log_tail_keeps_the_last_80_lines_within_2_kib() {
    let many: String = (0..200).map(|i| format!("line {i}\n")).collect();
    let t = log_tail(&many);
    assert_eq!(t.lines().count(), 80);
    assert!(
        t.starts_with("line 120\n") && t.ends_with("line 199\n"),
        "{t}"
    );
    let long = "x".repeat(5000);
    assert_eq!(log_tail(&long).len(), MAX_LOG_BYTES);
    assert_eq!(log_tail(""), "");
}

#[test]
fn the_end_is_read_with_the_message_or_the_error_tail() {
    let d = tempfile::tempdir().unwrap();
    let s = d.path();
    assert_eq!(read_end(s, true), GuestEnd::default());
    std::fs::write(s.join("exit_code"), "3\n").unwrap();
    std::fs::write(s.join("state"), "exited\n").unwrap();
    std::fs::write(s.join("stderr"), "warming up\nboom: disk full\n").unwrap();
    let e = read_end(s, false);
    assert_eq!((e.exit_code, e.state.as_deref()), (Some(3), Some("exited")));
    assert_eq!(e.message, None, "no fallback unless asked");
    let e = read_end(s, true);
    assert_eq!(e.message.as_deref(), Some("warming up\nboom: disk full\n"));
    std::fs::write(s.join("termination-log"), "y".repeat(6000)).unwrap();
    let e = read_end(s, true);
    assert_eq!(e.message.map(|m| m.len()), Some(MAX_MESSAGE_BYTES));
    clear_end(s);
    let e = read_end(s, false);
    assert_eq!((e.exit_code, e.message), (None, None));
}

#[test]
fn links_and_fifos_in_the_share_are_refused_and_never_read() {
    let d = tempfile::tempdir().unwrap();
    let host = tempfile::tempdir().unwrap();
    let secret = host.path().join("secret");
    std::fs::write(&secret, "7\nmarker-5f2c\n").unwrap();
    let s = d.path();
    for f in ["exit_code", "termination-log", "stderr"] {
        std::os::unix::fs::symlink(&secret, s.join(f)).unwrap();
    }
    nix::unistd::mkfifo(&s.join("state"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    nix::unistd::mkfifo(&s.join(JOB_FILE), nix::sys::stat::Mode::S_IRWXU).unwrap();
    let e = read_end(s, true);
    assert_eq!((e.exit_code, e.state, e.message), (None, None, None));
    let fifo = Refused::Fifo;
    let link = Refused::Link;
    assert_eq!(
        e.refused,
        [
            ("exit_code", link),
            ("state", fifo),
            ("termination-log", link),
            (JOB_FILE, fifo)
        ]
    );
    assert_eq!(read_job(s), None);
}

#[test]
fn the_job_mark_is_read_until_the_launcher_reports_the_end() {
    let d = tempfile::tempdir().unwrap();
    let s = d.path();
    assert_eq!(read_job(s), None, "nothing written yet");
    std::fs::write(s.join("state"), "running\n").unwrap();
    std::fs::write(s.join(JOB_FILE), "idle\n").unwrap();
    assert_eq!(read_job(s), Some(JobActivity::Idle));
    std::fs::write(s.join(JOB_FILE), "busy\n").unwrap();
    assert_eq!(read_job(s), Some(JobActivity::Busy));
    std::fs::write(s.join(JOB_FILE), "").unwrap();
    assert_eq!(read_job(s), None, "half-written: no news");
    std::fs::write(s.join(JOB_FILE), "busy\n").unwrap();
    std::fs::write(s.join("state"), "exited\n").unwrap();
    assert_eq!(read_job(s), Some(JobActivity::Ended));
    clear_end(s);
    assert!(
        !s.join(JOB_FILE).exists(),
        "a new run starts without a mark"
    );
}

#[test]
fn a_launcher_has_reported_once_it_wrote_a_state_and_not_after_a_clear() {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path();
    assert!(!launcher_reported(s), "no state yet");
    std::fs::write(s.join("state"), "").unwrap();
    assert!(!launcher_reported(s), "an empty state says nothing");
    std::fs::write(s.join("state"), "starting\n").unwrap();
    assert!(!launcher_reported(s), "still starting: no job yet");
    for word in ["running\n", "exited\n", "failed\n", "idle\n"] {
        std::fs::write(s.join("state"), word).unwrap();
        assert!(launcher_reported(s), "{word:?}");
    }
    clear_end(s);
    assert!(!launcher_reported(s), "the last run's state does not count");
    std::os::unix::fs::symlink("/etc/hostname", s.join("state")).unwrap();
    assert!(!launcher_reported(s), "a link in its place is not a report");
}
