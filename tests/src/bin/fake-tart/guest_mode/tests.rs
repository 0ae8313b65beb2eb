use super::*;

fn share(name: Option<&str>, path: &str, tag: &str) -> Share {
    Share {
        name: name.map(str::to_owned),
        path: path.into(),
        read_only: false,
        tag: tag.into(),
    }
}

fn mount(root: &Path) -> PathBuf {
    root.join("Volumes/My Shared Files")
}

#[test]
fn named_automounted_shares_are_links_under_my_shared_files() {
    let t = tempfile::tempdir().unwrap();
    let shares = [
        share(Some("control"), "/srv/c", AUTOMOUNT_TAG),
        share(Some("status"), "/srv/s", AUTOMOUNT_TAG),
        share(Some("cache"), "/srv/x", "cache"),
    ];
    layout(t.path(), &shares).unwrap();
    let m = mount(t.path());
    assert_eq!(
        fs::read_link(m.join("control")).unwrap(),
        Path::new("/srv/c")
    );
    assert_eq!(
        fs::read_link(m.join("status")).unwrap(),
        Path::new("/srv/s")
    );
    assert!(!m.join("cache").exists() && fs::symlink_metadata(m.join("cache")).is_err());
}

#[test]
fn a_single_unnamed_share_is_my_shared_files_itself_and_a_relayout_starts_clean() {
    let t = tempfile::tempdir().unwrap();
    layout(t.path(), &[share(Some("old"), "/srv/o", AUTOMOUNT_TAG)]).unwrap();
    layout(t.path(), &[share(None, "/srv/only", AUTOMOUNT_TAG)]).unwrap();
    assert_eq!(
        fs::read_link(mount(t.path())).unwrap(),
        Path::new("/srv/only")
    );
}

#[test]
fn a_relayout_keeps_what_was_installed_on_the_guests_disk_and_nothing_else() {
    let t = tempfile::tempdir().unwrap();
    layout(t.path(), &[share(Some("s"), "/srv/s", AUTOMOUNT_TAG)]).unwrap();
    for d in ["Library/LaunchDaemons", "usr/local/libexec", "tmp/job"] {
        fs::create_dir_all(t.path().join(d)).unwrap();
    }
    fs::write(t.path().join("Library/LaunchDaemons/x.plist"), "p").unwrap();
    fs::write(t.path().join("stray"), "s").unwrap();
    layout(t.path(), &[share(Some("s"), "/srv/s", AUTOMOUNT_TAG)]).unwrap();
    assert_eq!(
        fs::read_to_string(t.path().join("Library/LaunchDaemons/x.plist")).unwrap(),
        "p"
    );
    assert!(t.path().join("usr/local/libexec").is_dir());
    assert!(!t.path().join("tmp").exists() && !t.path().join("stray").exists());
}
