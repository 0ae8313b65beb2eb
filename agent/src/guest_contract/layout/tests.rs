use std::os::unix::fs::symlink;

use super::*;

fn vm(name: &str) -> VmName {
    VmName::new(name).unwrap()
}

fn planned(share: &str, content: VolumeContent) -> PlannedVolume {
    PlannedVolume {
        name: format!("{share}-name"),
        share: share.into(),
        content,
        reads: Vec::new(),
    }
}

fn mode(path: &Path) -> u32 {
    fs::symlink_metadata(path).unwrap().permissions().mode() & 0o7777
}

fn layout() -> (tempfile::TempDir, GuestLayout) {
    let tmp = tempfile::tempdir().unwrap();
    let layout = GuestLayout::new(tmp.path().join("guest"));
    (tmp, layout)
}

#[test]
fn create_makes_private_directories_empties_status_and_keeps_volume_content() {
    let (_tmp, l) = layout();
    let vm = vm("tk-abc");
    let volumes = [
        planned("vol-0", VolumeContent::Files(Vec::new())),
        planned("vol-2", VolumeContent::EmptyDir),
    ];
    l.create(&vm, &volumes).unwrap();
    for dir in [
        l.vm_dir(&vm).parent().unwrap().to_path_buf(),
        l.vm_dir(&vm),
        l.status(&vm),
        l.volume(&vm, "vol-0"),
        l.volume(&vm, "vol-2"),
    ] {
        assert_eq!(mode(&dir), 0o700, "{}", dir.display());
    }
    assert_eq!(l.volume(&vm, "vol-2"), l.vm_dir(&vm).join("volumes/vol-2"));
    fs::write(l.status(&vm).join("exit_code"), b"3\n").unwrap();
    fs::write(l.volume(&vm, "vol-2").join("kept"), b"scratch").unwrap();
    l.create(&vm, &volumes).unwrap();
    assert_eq!(fs::read_dir(l.status(&vm)).unwrap().count(), 0);
    assert!(
        !l.control(&vm).exists(),
        "the control share is its writer's to make"
    );
    assert_eq!(
        fs::read(l.volume(&vm, "vol-2").join("kept")).unwrap(),
        b"scratch"
    );
}

#[test]
fn create_refuses_a_symlink_in_place_of_a_directory() {
    let (tmp, l) = layout();
    let vm = vm("tk-abc");
    let elsewhere = tmp.path().join("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    fs::set_permissions(&elsewhere, fs::Permissions::from_mode(0o755)).unwrap();
    let volumes = [planned("vol-0", VolumeContent::EmptyDir)];
    l.create(&vm, &volumes).unwrap();
    fs::remove_dir(l.volume(&vm, "vol-0")).unwrap();
    symlink(&elsewhere, l.volume(&vm, "vol-0")).unwrap();
    let err = l.create(&vm, &volumes).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::PermissionDenied);
    assert_eq!(mode(&elsewhere), 0o755, "the link's target is not touched");
}

#[test]
fn a_vm_without_volumes_gets_no_volumes_directory() {
    let (_tmp, l) = layout();
    let vm = vm("tk-abc");
    l.create(&vm, &[]).unwrap();
    let mut made: Vec<_> = fs::read_dir(l.vm_dir(&vm))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    made.sort();
    assert_eq!(made, ["status"]);
}

#[test]
fn shares_name_every_directory_and_only_empty_dirs_and_status_are_writable() {
    let l = GuestLayout::new(PathBuf::from("/g"));
    let vm = vm("tk-abc");
    let volumes = [
        planned("vol-0", VolumeContent::Files(Vec::new())),
        planned("vol-1", VolumeContent::EmptyDir),
    ];
    let got: Vec<(Option<String>, PathBuf, bool, Option<String>)> = l
        .shares(&vm, &volumes)
        .into_iter()
        .map(|s| (s.name, s.path, s.read_only, s.tag))
        .collect();
    let want = |name: &str, path: &str, ro| (Some(name.to_owned()), PathBuf::from(path), ro, None);
    assert_eq!(
        got,
        vec![
            want("control", "/g/tk-abc/control", true),
            want("status", "/g/tk-abc/status", false),
            want("vol-0", "/g/tk-abc/volumes/vol-0", true),
            want("vol-1", "/g/tk-abc/volumes/vol-1", false),
        ]
    );
}

#[test]
fn remove_and_sweep_never_follow_symlinks() {
    let (tmp, l) = layout();
    let outside = tmp.path().join("outside");
    fs::create_dir(&outside).unwrap();
    fs::write(outside.join("precious"), b"keep").unwrap();
    for name in ["tk-a", "tk-b", "tk-c", "other"] {
        l.create(&vm(name), &[planned("vol-0", VolumeContent::EmptyDir)])
            .unwrap();
    }
    // The guest can write an emptyDir: a link planted there must not lead the removal out.
    symlink(&outside, l.volume(&vm("tk-a"), "vol-0").join("escape")).unwrap();
    symlink(&outside, l.vm_dir(&vm("tk-link"))).unwrap();
    l.remove(&vm("tk-a")).unwrap();
    assert!(!l.vm_dir(&vm("tk-a")).exists());
    l.remove(&vm("tk-missing")).unwrap();

    let keep: HashSet<String> = ["tk-b".to_owned()].into();
    assert_eq!(l.sweep("tk-", &keep).unwrap(), vec!["tk-c", "tk-link"]);
    assert!(l.vm_dir(&vm("tk-b")).is_dir());
    assert!(l.vm_dir(&vm("other")).is_dir());
    assert_eq!(fs::read(outside.join("precious")).unwrap(), b"keep");
    assert_eq!(
        GuestLayout::new(tmp.path().join("absent"))
            .sweep("tk-", &keep)
            .unwrap(),
        Vec::<String>::new()
    );
}
