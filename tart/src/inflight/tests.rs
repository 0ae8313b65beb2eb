use super::*;

#[test]
fn only_a_group_leader_running_our_program_is_ours() {
    let tart = Path::new("/opt/homebrew/bin/tart");
    let ours = "  4242 /opt/homebrew/bin/tart clone ghcr.io/x:1 tkl-abc\n";
    assert!(leads_its_group_running(ours, 4242, tart));
    // The PID was reused by something else, or by a tart that is not a group leader.
    assert!(!leads_its_group_running(
        "4242 /usr/bin/vim notes",
        4242,
        tart
    ));
    assert!(!leads_its_group_running(
        "100 /opt/homebrew/bin/tart list",
        4242,
        tart
    ));
    // A longer path that merely starts with ours.
    assert!(!leads_its_group_running(
        "4242 /opt/homebrew/bin/tart-other x",
        4242,
        tart
    ));
    // A bare program name, as found on PATH.
    assert!(leads_its_group_running(
        "4242 tart pull ghcr.io/x:1",
        4242,
        Path::new("tart")
    ));
    assert!(!leads_its_group_running("", 4242, tart));
}

#[tokio::test]
async fn records_of_this_process_are_never_reaped_and_gone_ones_are_cleared() {
    let tmp = tempfile::tempdir().unwrap();
    // Not there yet: the first record creates it.
    let dir = tmp.path().join("inflight");
    let me = std::process::id();
    let rec = record(&dir, me, Path::new("/bin/sh")).unwrap();
    // A record of a process that no longer exists, left by another owner.
    std::fs::write(dir.join("999999999"), "1\n/bin/sh\n").unwrap();
    assert!(reap(&dir, Path::new("/bin/sh")).await.is_empty());
    assert!(
        dir.join(me.to_string()).exists(),
        "our own record was reaped"
    );
    assert!(!dir.join("999999999").exists(), "a dead record was kept");
    drop(rec);
    assert!(
        !dir.join(me.to_string()).exists(),
        "record outlived its command"
    );
}
