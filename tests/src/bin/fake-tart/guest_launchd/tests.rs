use super::*;

fn plist(root: &Path) -> PathBuf {
    let p = root.join(PLIST);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(&p, "<plist/>").unwrap();
    p
}

#[test]
fn only_root_bootstraps_into_the_system_domain_and_run_takes_the_request_once() {
    let t = tempfile::tempdir().unwrap();
    let p = plist(t.path());
    let p = p.to_str().unwrap();
    assert_eq!(
        bootstrap(t.path(), p, "admin"),
        Err((1, "Operation not permitted"))
    );
    assert_eq!(take_request(t.path()), None);
    assert_eq!(bootstrap(t.path(), p, "root"), Ok(()));
    assert_eq!(
        bootstrap(t.path(), p, "root"),
        Err((5, "Input/output error")),
        "already loaded"
    );
    assert_eq!(take_request(t.path()), Some(Request::Load));
    assert_eq!(take_request(t.path()), None, "taken once");
}

#[test]
fn a_missing_plist_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let missing = t.path().join("nope.plist");
    assert_eq!(
        bootstrap(t.path(), missing.to_str().unwrap(), "root"),
        Err((2, "No such file or directory"))
    );
}

#[test]
fn bootout_stops_a_loaded_launcher_and_refuses_one_that_is_not() {
    let t = tempfile::tempdir().unwrap();
    let target = format!("system/{LABEL}");
    assert_eq!(
        bootout(t.path(), &target, "root"),
        Err((3, "No such process"))
    );
    mark_loaded(t.path()).unwrap();
    assert_eq!(
        bootout(t.path(), &target, "admin"),
        Err((1, "Operation not permitted"))
    );
    assert_eq!(bootout(t.path(), &target, "root"), Ok(()));
    assert_eq!(take_request(t.path()), Some(Request::Unload));
    assert_eq!(
        bootout(t.path(), &target, "root"),
        Err((3, "No such process"))
    );
}

#[test]
fn a_baked_image_has_both_files_at_their_installed_paths() {
    let t = tempfile::tempdir().unwrap();
    let (l, p) = (t.path().join("l"), t.path().join("p"));
    fs::write(&l, "launcher").unwrap();
    fs::write(&p, "plist").unwrap();
    let root = t.path().join("root");
    bake(&root, &l, &p).unwrap();
    assert_eq!(fs::read_to_string(root.join(LAUNCHER)).unwrap(), "launcher");
    assert_eq!(fs::read_to_string(root.join(PLIST)).unwrap(), "plist");
}
