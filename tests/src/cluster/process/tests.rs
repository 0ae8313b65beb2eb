use super::*;

#[test]
fn this_process_is_alive_and_not_a_zombie() {
    assert!(!is_zombie(PathBuf::from("/proc/self/stat")));
    assert!(
        is_zombie(PathBuf::from("/proc/no-such-pid/stat")),
        "unreadable counts as gone"
    );
}

#[test]
fn script_past_its_deadline_is_killed_and_reported() {
    let t0 = std::time::Instant::now();
    let err = run_script(Path::new("/bin/sleep"), &["30"], Duration::from_millis(300)).unwrap_err();
    assert!(err.to_string().contains("no exit after"), "{err:#}");
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
}

#[test]
fn failing_script_reports_its_stderr() {
    let err = run_script(
        Path::new("/bin/sh"),
        &["-c", "echo boom >&2; exit 3"],
        Duration::from_secs(10),
    )
    .unwrap_err();
    assert!(format!("{err:#}").contains("boom"), "{err:#}");
}
