use super::*;

#[test]
fn cksum_matches_the_posix_tool() {
    // `printf %s X | cksum` with GNU coreutils.
    assert_eq!(cksum_line(b""), "4294967295 0");
    assert_eq!(cksum_line(b"abc"), "1219131554 3");
    assert_eq!(
        cksum_line(b"0123456789abcdef0123456789abcdef"),
        "1714330745 32"
    );
}

#[test]
fn the_token_is_in_the_secret_and_never_in_the_jobs_argv() {
    let t = RunnerToken::random();
    let job = Job {
        seconds: 6.0,
        checksum: t.checksum(),
    };
    let argv = [job.command(), job.args()].concat();
    assert!(argv.iter().all(|a| !a.contains(&t.value)), "{argv:?}");
    assert_eq!(job.args(), vec!["6.000".to_string(), t.checksum()]);
    let s = t.secret();
    assert_eq!(
        s.string_data.unwrap().get(SECRET_KEY),
        Some(&t.value),
        "the Secret holds the token"
    );
    assert!(!format!("{t:?}").contains(&t.value));
    assert_ne!(RunnerToken::random().value, t.value);
}

#[test]
fn the_job_script_has_nothing_the_agent_would_expand() {
    assert!(!JOB_SCRIPT.contains("$("), "{JOB_SCRIPT}");
    assert!(JOB_SCRIPT.contains(&format!("exit {MISMATCH_EXIT}")));
    assert!(JOB_SCRIPT.contains(ENV_NAME));
}

#[test]
fn checks_are_classified_from_the_guests_exit_code_then_the_pods_end() {
    let table = [
        (true, Some(0), Check::Passed),
        (false, Some(0), Check::Passed),
        (true, Some(3), Check::Rejected(3)),
        (false, Some(3), Check::Rejected(3)),
        (true, None, Check::Unverified),
        (false, None, Check::CutShort),
    ];
    for (succeeded, exit, want) in table {
        assert_eq!(
            Check::classify(succeeded, exit),
            want,
            "{succeeded} {exit:?}"
        );
    }
    let c = CheckCounts::of(&[Check::Passed, Check::Passed, Check::Rejected(3)]);
    assert_eq!((c.passed, c.secret_rejected, c.cut_short), (2, 1, 0));
}

#[test]
fn the_exit_code_is_read_from_whichever_agents_guest_dir_has_the_vm() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let status = b.path().join("tkl-u1/status");
    std::fs::create_dir_all(&status).unwrap();
    std::fs::write(status.join("exit_code"), "3\n").unwrap();
    let dirs = GuestDirs(vec![a.path().into(), b.path().into()]);
    assert_eq!(dirs.exit_code(&vm_of("u1")), Some(3));
    assert_eq!(dirs.exit_code(&vm_of("u2")), None);
}

#[test]
fn a_pod_first_seen_ended_while_deleting_without_an_exit_code_was_not_checked() {
    let table = [
        // (succeeded, deleting, exit, check)
        (true, true, None, Check::NotChecked),
        (false, true, None, Check::NotChecked),
        (true, true, Some(0), Check::Passed),
        (false, true, Some(3), Check::Rejected(3)),
        (true, false, None, Check::Unverified),
        (false, false, None, Check::CutShort),
        (true, false, Some(0), Check::Passed),
    ];
    for (succeeded, deleting, exit, want) in table {
        assert_eq!(
            Check::classify_seen(succeeded, deleting, exit),
            want,
            "{succeeded} {deleting} {exit:?}"
        );
    }
    assert!(Check::Passed.evidence() > Check::Unverified.evidence());
    assert!(Check::CutShort.evidence() > Check::NotChecked.evidence());
    let c = CheckCounts::of(&[Check::NotChecked, Check::Passed]);
    assert_eq!((c.passed, c.not_checked), (1, 1));
}
