use super::*;

#[test]
fn the_shared_bandwidth_is_split_evenly_and_capped_by_the_macs_own_speed() {
    assert_eq!(rate_mb_per_s(100.0, None, 5), 100.0);
    assert_eq!(rate_mb_per_s(100.0, Some(200.0), 1), 100.0);
    assert_eq!(rate_mb_per_s(100.0, Some(200.0), 2), 100.0);
    assert_eq!(rate_mb_per_s(100.0, Some(200.0), 4), 50.0);
    assert_eq!(rate_mb_per_s(100.0, Some(200.0), 0), 100.0);
}

#[test]
fn registrations_count_while_held_and_a_dead_entry_is_removed() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(active_pulls(&dir.path().join("missing")), 0);
    let a = register(dir.path()).unwrap();
    let b = register(dir.path()).unwrap();
    assert_eq!(active_pulls(dir.path()), 2);
    drop(a);
    assert_eq!(active_pulls(dir.path()), 1);
    // An entry no process holds: what a SIGKILLed pull leaves.
    let dead = dir.path().join(format!("{ENTRY_PREFIX}1-dead"));
    fs::write(&dead, b"").unwrap();
    assert_eq!(active_pulls(dir.path()), 1);
    assert!(!dead.exists());
    drop(b);
    assert_eq!(active_pulls(dir.path()), 0);
}
