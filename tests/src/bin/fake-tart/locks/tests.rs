use super::*;

#[test]
fn a_second_flock_on_the_same_path_is_refused_until_the_first_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("lock");
    let g = try_flock(&p).unwrap().expect("first lock");
    assert!(try_flock(&p).unwrap().is_none());
    drop(g);
    assert!(try_flock(&p).unwrap().is_some());
}

#[test]
fn gc_removes_unlocked_tmp_entries_and_keeps_locked_ones() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    fs::create_dir(&a).unwrap();
    fs::create_dir(&b).unwrap();
    let held = try_flock(&a).unwrap().unwrap();
    gc_tmp(dir.path()).unwrap();
    assert!(a.exists());
    assert!(!b.exists());
    drop(held);
}
