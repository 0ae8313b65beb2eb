use std::collections::BTreeMap;
use std::os::unix::fs::symlink;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use super::*;
use crate::guest_contract::{atomic::write_atomic, model::MountSpec};

const LAUNCHER: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../packaging/guest/tart-guest-launcher"
);

/// Newlines (trailing ones too), quotes, `$(…)`, backquotes, `=`, invalid UTF-8, 100 KiB.
fn tricky_value() -> Vec<u8> {
    let mut v = b"\"dq\" 'sq' $(touch pwned) `id` $HOME ${X} \\ a=b==\n\tline2\n".to_vec();
    v.extend([0xff, 0xfe, 0x80, b'\n']);
    v.extend((0..100 * 1024).map(|i| b'a' + (i % 26) as u8));
    v.extend(b"\n\n");
    v
}

/// The command for the argv, working-directory and volume checks: dump its argv and working
/// directory, and read the volume through both mounts.
const SCRIPT: &str = r#"printf '%s\0' "$0" "$@" > argv.dump
pwd > pwd.out
cat "$TART_GUEST_ROOT/etc/app/one.conf" > volume.out
cat "$TART_GUEST_ROOT/etc/one.conf" > sub.out
printf 'done: %s\n' "$1" > "$TART_GUEST_ROOT/work dir/termination-message"
"#;

fn spec() -> ControlSpec {
    ControlSpec {
        env: vec![
            ("DUP".into(), b"first".to_vec()),
            ("TRICKY".into(), tricky_value()),
            ("PATH".into(), b"/usr/bin:/bin".to_vec()),
            ("dotted.name-x".into(), b"v=1\n\n".to_vec()),
            ("EMPTY".into(), Vec::new()),
            ("DUP".into(), b"second".to_vec()),
        ],
        command: vec!["/bin/sh".into(), "-c".into(), SCRIPT.into()],
        args: vec![
            "script".into(),
            "it's \"$(an arg)\" `id` $HOME\n\n".into(),
            String::new(),
            "x=y".into(),
        ],
        workdir: Some("/work dir".into()),
        user: None,
        termination_message_path: Some("/work dir/termination-message".into()),
        stdin: Default::default(),
        mounts: vec![
            MountSpec {
                share: "vol-0".into(),
                path: "/etc/app".into(),
                sub: None,
            },
            MountSpec {
                share: "vol-0".into(),
                path: "/etc/one.conf".into(),
                sub: Some("one.conf".into()),
            },
        ],
    }
}

fn mode(path: &Path) -> u32 {
    fs::symlink_metadata(path).unwrap().permissions().mode() & 0o7777
}

/// A guest root whose shares are the control share written by [`write_control`], a status
/// share and one volume written by [`write_atomic`].
struct Guest {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    status: PathBuf,
}

impl Guest {
    fn new(spec: &ControlSpec) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let vm = tmp.path().join("vm");
        let (control, status, volume) = (vm.join("control"), vm.join("status"), vm.join("vol-0"));
        for d in [&vm, &status, &volume] {
            make_dir(d).unwrap();
        }
        write_control(&control, spec).unwrap();
        let file = ("one.conf".to_owned(), b"volume file\n".to_vec(), 0o644);
        write_atomic(&volume, &[file]).unwrap();
        let root = tmp.path().join("guest");
        let shares = root.join("Volumes/My Shared Files");
        fs::create_dir_all(&shares).unwrap();
        for (name, target) in [
            ("control", &control),
            ("status", &status),
            ("vol-0", &volume),
        ] {
            symlink(target, shares.join(name)).unwrap();
        }
        Self {
            _tmp: tmp,
            root,
            status,
        }
    }

    /// Run the launcher the way fake-tart does (docs/guest.md, "fake-tart as the guest") and
    /// check that it ran the command to a 0 exit.
    fn launch(&self) {
        let child = Command::new("/bin/sh")
            .arg(LAUNCHER)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("TART_GUEST_ROOT", &self.root)
            .env("TART_GUEST_ON_EXIT", "exit")
            .env("TART_GUEST_SHARE_TIMEOUT", "5")
            .current_dir(&self.root)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || tx.send(child.wait_with_output()));
        let out = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the launcher did not finish")
            .unwrap();
        let log = fs::read_to_string(self.status.join("launcher.log")).unwrap_or_default();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr} {log}");
        assert_eq!(
            fs::read_to_string(self.status.join("exit_code")).unwrap(),
            "0\n"
        );
    }
}

#[test]
fn the_real_launcher_gives_the_command_every_variable_byte_for_byte() {
    // env(1) itself is the command: a shell in between would drop the names it cannot export.
    let spec = ControlSpec {
        command: vec!["/usr/bin/env".into(), "-0".into()],
        args: Vec::new(),
        ..spec()
    };
    let guest = Guest::new(&spec);
    guest.launch();
    let dump = fs::read(guest.status.join("stdout")).unwrap();
    let mut seen: BTreeMap<&[u8], &[u8]> = BTreeMap::new();
    for entry in dump.split(|b| *b == 0).filter(|e| !e.is_empty()) {
        let eq = entry.iter().position(|b| *b == b'=').unwrap();
        seen.insert(&entry[..eq], &entry[eq + 1..]);
    }
    // Later duplicates win (kubelet's order), so the expected map is built in order too.
    let want: BTreeMap<&[u8], &[u8]> = spec
        .env
        .iter()
        .map(|(name, value)| (name.as_bytes(), value.as_slice()))
        .collect();
    assert_eq!(want.len(), 5);
    for (name, value) in want {
        let shown = String::from_utf8_lossy(name);
        assert!(
            seen.get(name) == Some(&value),
            "{shown} differs or is missing"
        );
    }
}

#[test]
fn the_real_launcher_passes_args_workdir_and_mounts_unchanged() {
    let spec = spec();
    let guest = Guest::new(&spec);
    guest.launch();
    let workdir = guest.root.join("work dir");
    let mut argv = Vec::new();
    for arg in &spec.args {
        argv.extend(arg.as_bytes());
        argv.push(0);
    }
    assert_eq!(fs::read(workdir.join("argv.dump")).unwrap(), argv);
    assert_eq!(
        fs::read_to_string(workdir.join("pwd.out"))
            .unwrap()
            .trim_end(),
        workdir.to_str().unwrap()
    );
    assert_eq!(
        fs::read(workdir.join("volume.out")).unwrap(),
        b"volume file\n"
    );
    assert_eq!(fs::read(workdir.join("sub.out")).unwrap(), b"volume file\n");
    assert!(!workdir.join("pwned").exists(), "a value was evaluated");
    assert_eq!(
        fs::read_to_string(guest.status.join("termination-log")).unwrap(),
        "done: it's \"$(an arg)\" `id` $HOME\n\n\n",
        "the termination message is copied into the status share"
    );
}

#[test]
fn the_share_is_private_and_a_rewrite_leaves_no_stale_file() {
    let tmp = tempfile::tempdir().unwrap();
    let control = tmp.path().join("control");
    write_control(&control, &spec()).unwrap();
    assert_eq!(mode(&control), 0o700);
    assert_eq!(mode(&control.join("env")), 0o700);
    assert_eq!(mode(&control.join("mounts/1")), 0o700);
    assert_eq!(mode(&control.join("env/1")), 0o600);
    assert_eq!(mode(&control.join("version")), 0o600);
    assert_eq!(fs::read(control.join("version")).unwrap(), b"1");
    assert_eq!(
        fs::read(control.join("env/3")).unwrap(),
        b"dotted.name-x=v=1\n\n"
    );
    assert_eq!(fs::read(control.join("mounts/1/sub")).unwrap(), b"one.conf");
    assert!(!control.join("mounts/0/sub").exists());
    assert!(!control.join("user").exists());

    let short = ControlSpec {
        command: vec!["/bin/true".into()],
        user: Some("501".into()),
        ..ControlSpec::default()
    };
    write_control(&control, &short).unwrap();
    let mut entries: Vec<String> = fs::read_dir(&control)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    entries.sort();
    assert_eq!(entries, ["command", "user", "version"]);
    assert!(!control.join("command/1").exists());
    assert_eq!(fs::read(control.join("user")).unwrap(), b"501");
    let siblings: Vec<_> = fs::read_dir(tmp.path()).unwrap().collect();
    assert_eq!(siblings.len(), 1, "no temporary directory is left behind");
}

#[test]
fn values_the_launcher_cannot_carry_are_refused_and_the_old_share_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let control = tmp.path().join("control");
    write_control(&control, &spec()).unwrap();
    let bad = [
        ("A=B", b"x".to_vec()),
        ("", b"x".to_vec()),
        ("NUL", b"a\0b".to_vec()),
    ];
    for (name, value) in bad {
        let spec = ControlSpec {
            env: vec![(name.into(), value)],
            ..ControlSpec::default()
        };
        let err = write_control(&control, &spec).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{name:?}");
        assert!(!err.to_string().contains("a\0b"));
    }
    let nul_arg = ControlSpec {
        args: vec!["a\0b".into()],
        ..ControlSpec::default()
    };
    assert_eq!(
        write_control(&control, &nul_arg).unwrap_err().kind(),
        io::ErrorKind::InvalidInput
    );
    assert!(
        control.join("command/2").exists(),
        "the previous share is intact"
    );
    assert_eq!(fs::read_dir(tmp.path()).unwrap().count(), 1);

    let elsewhere = tmp.path().join("elsewhere");
    make_dir(&elsewhere).unwrap();
    let link = tmp.path().join("link");
    symlink(&elsewhere, &link).unwrap();
    let err = write_control(&link, &ControlSpec::default()).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::PermissionDenied);
    assert_eq!(fs::read_dir(&elsewhere).unwrap().count(), 0);
}
