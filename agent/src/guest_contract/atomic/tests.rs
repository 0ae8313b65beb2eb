use std::os::unix::fs::{PermissionsExt, symlink};
use std::sync::atomic::{AtomicBool, Ordering};

use super::*;

/// Puts something in a fresh volume directory.
type Plant<'a> = Box<dyn Fn(&Path) + 'a>;

fn f(path: &str, bytes: &[u8], mode: u32) -> (String, Vec<u8>, u32) {
    (path.to_owned(), bytes.to_vec(), mode)
}

fn volume_dir() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("vol-0");
    DirBuilder::new().mode(0o700).create(&dir).unwrap();
    (tmp, dir)
}

fn data_target(dir: &Path) -> PathBuf {
    fs::read_link(dir.join(DATA)).unwrap()
}

fn mode(path: &Path) -> u32 {
    fs::symlink_metadata(path).unwrap().permissions().mode() & 0o7777
}

/// The directory's entries, sorted, with symlink targets.
fn listing(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let name = e.file_name().into_string().unwrap();
            match fs::read_link(e.path()) {
                Ok(t) => format!("{name} -> {}", t.display()),
                Err(_) => name,
            }
        })
        .collect();
    out.sort();
    out
}

#[test]
fn first_write_links_every_top_level_entry_through_data_with_its_mode() {
    let (_tmp, dir) = volume_dir();
    let files = [f("token", b"t1", 0o644), f("conf/a.yaml", b"a", 0o400)];
    assert!(write_atomic(&dir, &files).unwrap());
    let stamp = data_target(&dir);
    assert_eq!(
        listing(&dir),
        vec![
            format!("{}", stamp.display()),
            format!("..data -> {}", stamp.display()),
            "conf -> ..data/conf".to_owned(),
            "token -> ..data/token".to_owned(),
        ]
    );
    assert_eq!(fs::read(dir.join("token")).unwrap(), b"t1");
    assert_eq!(fs::read(dir.join("conf/a.yaml")).unwrap(), b"a");
    let stamp = dir.join(stamp);
    assert_eq!(mode(&stamp.join("token")), 0o644);
    assert_eq!(mode(&stamp.join("conf/a.yaml")), 0o400);
    assert_eq!(mode(&stamp.join("conf")), 0o755);
    assert_eq!(mode(&stamp), 0o755);
    assert_eq!(mode(&dir), 0o700, "the volume directory keeps its own mode");
}

#[test]
fn identical_content_writes_nothing_and_a_mode_change_alone_rewrites() {
    let (_tmp, dir) = volume_dir();
    let files = [f("a", b"1", 0o644), f("d/b", b"2", 0o644)];
    assert!(write_atomic(&dir, &files).unwrap());
    let before = data_target(&dir);
    assert!(!write_atomic(&dir, &files).unwrap());
    assert_eq!(data_target(&dir), before);
    let chmod = [f("a", b"1", 0o600), f("d/b", b"2", 0o644)];
    assert!(write_atomic(&dir, &chmod).unwrap());
    assert_ne!(data_target(&dir), before);
    assert_eq!(mode(&dir.join(data_target(&dir)).join("a")), 0o600);
}

#[test]
fn an_update_swaps_data_fixes_the_links_and_removes_the_old_directory() {
    let (_tmp, dir) = volume_dir();
    write_atomic(&dir, &[f("a", b"old", 0o644), f("gone", b"x", 0o644)]).unwrap();
    let old = data_target(&dir);
    assert!(write_atomic(&dir, &[f("a", b"new", 0o644), f("sub/added", b"y", 0o644)]).unwrap());
    let new = data_target(&dir);
    assert_ne!(new, old);
    assert!(!dir.join(&old).exists(), "the old directory is removed");
    assert_eq!(fs::read(dir.join("a")).unwrap(), b"new");
    assert_eq!(fs::read(dir.join("sub/added")).unwrap(), b"y");
    assert_eq!(
        listing(&dir),
        vec![
            format!("{}", new.display()),
            format!("..data -> {}", new.display()),
            "a -> ..data/a".to_owned(),
            "sub -> ..data/sub".to_owned(),
        ]
    );
    assert!(write_atomic(&dir, &[]).unwrap());
    assert_eq!(listing(&dir).len(), 2, "{:?}", listing(&dir));
}

#[test]
fn a_reader_through_data_never_sees_a_mix_of_two_versions() {
    let (_tmp, dir) = volume_dir();
    let version = |v: u8| [f("a", &[v; 64], 0o644), f("nested/b", &[v; 64], 0o644)];
    write_atomic(&dir, &version(0)).unwrap();
    let stop = AtomicBool::new(false);
    let consistent_reads = std::thread::scope(|s| {
        let reader = s.spawn(|| {
            let mut reads = 0u32;
            while !stop.load(Ordering::Relaxed) {
                let stamp = data_target(&dir);
                let (a, b) = (
                    fs::read(dir.join(&stamp).join("a")),
                    fs::read(dir.join(&stamp).join("nested/b")),
                );
                match (a, b) {
                    (Ok(a), Ok(b)) => {
                        assert_eq!(a, b, "files of one directory from two versions");
                        reads += 1;
                    }
                    // The directory was removed after the swap: only an old one may vanish.
                    _ => assert_ne!(
                        data_target(&dir),
                        stamp,
                        "..data pointed at a partial directory"
                    ),
                }
            }
            reads
        });
        for i in 1..=200u8 {
            assert!(write_atomic(&dir, &version(i)).unwrap());
        }
        stop.store(true, Ordering::Relaxed);
        reader.join().unwrap()
    });
    assert!(consistent_reads > 0);
    assert_eq!(fs::read(dir.join("a")).unwrap(), vec![200; 64]);
}

#[test]
fn entries_the_writer_did_not_create_are_refused_and_never_followed() {
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("victim");
    fs::write(&victim, b"keep").unwrap();
    let plants: Vec<(&str, Plant<'_>)> = vec![
        (
            "a link to a file outside",
            Box::new(|d: &Path| symlink(&victim, d.join("a")).unwrap()),
        ),
        (
            "a link to a directory outside",
            Box::new(|d: &Path| symlink(outside.path(), d.join("x")).unwrap()),
        ),
        (
            "..data pointing outside",
            Box::new(|d: &Path| symlink(outside.path(), d.join(DATA)).unwrap()),
        ),
        (
            "a plain file",
            Box::new(|d: &Path| fs::write(d.join("a"), b"planted").unwrap()),
        ),
        (
            "a symlink posing as a stamp",
            Box::new(|d: &Path| symlink(outside.path(), d.join("..2024")).unwrap()),
        ),
    ];
    for (what, plant) in plants {
        let (_tmp, dir) = volume_dir();
        plant(&dir);
        let before = listing(&dir);
        let err = write_atomic(&dir, &[f("a", b"new", 0o644)]).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::PermissionDenied, "{what}: {err}");
        assert!(
            err.to_string().contains("not created by the agent"),
            "{what}: {err}"
        );
        assert_eq!(listing(&dir), before, "{what}: nothing written");
        assert_eq!(fs::read(&victim).unwrap(), b"keep", "{what}");
    }
    // The volume directory itself may not be a symlink.
    let (tmp, dir) = volume_dir();
    let link = tmp.path().join("link");
    symlink(&dir, &link).unwrap();
    let err = write_atomic(&link, &[f("a", b"x", 0o644)]).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::PermissionDenied);
    assert!(listing(&dir).is_empty());
}

#[test]
fn paths_that_leave_the_directory_or_collide_are_invalid_input() {
    let (_tmp, dir) = volume_dir();
    for bad in [
        vec![f("", b"", 0o644)],
        vec![f("/abs", b"", 0o644)],
        vec![f("a/../b", b"", 0o644)],
        vec![f("a//b", b"", 0o644)],
        vec![f("./a", b"", 0o644)],
        vec![f("..data", b"", 0o644)],
        vec![f("a", b"", 0o644), f("a", b"", 0o644)],
        vec![f("a", b"", 0o644), f("a/b", b"", 0o644)],
    ] {
        let err = write_atomic(&dir, &bad).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{bad:?}");
    }
    assert!(listing(&dir).is_empty());
}

#[test]
fn leftovers_of_an_interrupted_write_are_cleaned_up() {
    let (_tmp, dir) = volume_dir();
    write_atomic(&dir, &[f("a", b"1", 0o644)]).unwrap();
    let current = data_target(&dir);
    DirBuilder::new().create(dir.join("..1.000000000")).unwrap();
    fs::write(dir.join("..1.000000000/a"), b"half").unwrap();
    symlink("..1.000000000", dir.join(DATA_TMP)).unwrap();
    assert!(!write_atomic(&dir, &[f("a", b"1", 0o644)]).unwrap());
    assert_eq!(data_target(&dir), current);
    assert!(!dir.join("..1.000000000").exists());
    assert!(fs::symlink_metadata(dir.join(DATA_TMP)).is_err());
    assert!(write_atomic(&dir, &[f("a", b"2", 0o644)]).unwrap());
    assert_eq!(fs::read(dir.join("a")).unwrap(), b"2");
}
