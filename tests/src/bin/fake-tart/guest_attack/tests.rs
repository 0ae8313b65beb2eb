use super::*;

#[test]
fn each_attack_leaves_what_it_says() {
    let d = tempfile::tempdir().unwrap();
    let s = d.path();
    fs::write(s.join("stdout"), "out\n").unwrap();
    let attack = |files: &[&str], how| GuestAttack {
        files: files.iter().map(|f| (*f).to_owned()).collect(),
        how,
    };
    play(
        s,
        &attack(&["exit_code"], AttackKind::Symlink("/etc/hostname".into())),
    )
    .unwrap();
    assert_eq!(
        fs::read_link(s.join("exit_code")).unwrap(),
        Path::new("/etc/hostname")
    );
    play(s, &attack(&["vitals"], AttackKind::Fifo)).unwrap();
    use std::os::unix::fs::FileTypeExt;
    assert!(
        fs::symlink_metadata(s.join("vitals"))
            .unwrap()
            .file_type()
            .is_fifo()
    );
    play(s, &attack(&["stdout"], AttackKind::Grow(1 << 30))).unwrap();
    let len = fs::metadata(s.join("stdout")).unwrap().len();
    assert_eq!(len, 4 + (1 << 30) + 1 + AFTER_FLOOD.len() as u64 + 1);
}
