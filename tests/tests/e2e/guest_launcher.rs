//! The real guest launcher (`packaging/guest/tart-guest-launcher`) run by fake-tart acting as
//! the guest: a control share written by hand the way the agent writes it (docs/guest.md),
//! and assertions from the status share that the command saw every value byte for byte, its
//! output was mirrored, its exit code recorded, and no value leaked into argv records or the
//! launcher's own output. The launcher is also run directly against a guest root for its
//! failure paths, the image entry and environment names a shell cannot export.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tart_kubelet_tests::fake::{FakeHome, Knobs, VmKnob, poll_until};

const FT: &str = env!("CARGO_BIN_EXE_fake-tart");

/// An env value with everything a shell could mangle: newlines (trailing ones too), quotes,
/// `$(...)`, backquotes, backslashes, a `=`, non-UTF-8 bytes and 100 KiB of payload.
fn tricky_value() -> Vec<u8> {
    let mut v =
        b"SECRET-MARKER-7f3a \"dq\" 'sq' $(touch pwned) `id` \\n \\ $HOME ${X} a=b\n\tline2\n"
            .to_vec();
    v.extend([0xff, 0xfe, b'\n']);
    v.extend((0..100 * 1024).map(|i| b'a' + (i % 26) as u8));
    v.extend(b"\n\n");
    v
}

fn write(path: &Path, bytes: &[u8]) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, bytes).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o600)).unwrap();
}

/// The command: dump the variables it sees into the working directory, wait on the gate FIFO
/// (so the test can inspect every process's argv while it runs), print to both streams, and
/// exit 3.
const SCRIPT: &str = r#"printf %s "$TRICKY" > tricky.out
printf %s "$2" > arg2.out
pwd > pwd.out
cat "$TART_GUEST_ROOT$1/config" > volume.out
: > started
read -r _ < "$3"
echo "to stdout"
echo "to stderr" >&2
exit 3"#;

#[tokio::test]
async fn the_command_sees_every_value_and_its_output_and_exit_code_reach_the_status_share() {
    let h = FakeHome::new().unwrap();
    h.create_vm("vm1").unwrap();
    h.set_knobs(&Knobs::new().with_vm("vm1", VmKnob::default().running_guest_launcher()))
        .unwrap();
    let shares = tempfile::tempdir().unwrap();
    let (control, status, volume) = (
        shares.path().join("control"),
        shares.path().join("status"),
        shares.path().join("vol-config"),
    );
    let value = tricky_value();
    let mut pair = b"TRICKY=".to_vec();
    pair.extend(&value);
    write(&control.join("version"), b"1");
    write(&control.join("env/0"), b"TRICKY=overridden");
    write(&control.join("env/1"), &pair);
    write(&control.join("env/2"), b"PATH=/usr/bin:/bin");
    write(&control.join("command/0"), b"/bin/sh");
    write(&control.join("command/1"), b"-c");
    write(&control.join("args/0"), SCRIPT.as_bytes());
    write(&control.join("args/1"), b"script");
    write(&control.join("args/2"), b"/etc/app");
    write(&control.join("args/3"), b"it's \"$(an arg)\"\n");
    let gate = shares.path().join("gate");
    nix::unistd::mkfifo(&gate, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    write(&control.join("args/4"), gate.as_os_str().as_encoded_bytes());
    write(&control.join("workdir"), b"/work dir");
    write(&control.join("mounts/0/share"), b"vol-config");
    write(&control.join("mounts/0/path"), b"/etc/app");
    write(&volume.join("config"), b"volume file\n");
    fs::create_dir_all(&status).unwrap();
    let dir = |name: &str, p: &Path, ro: &str| format!("{name}:{}{ro}", p.display());
    let run = h
        .command(FT)
        .args(["run", "vm1", "--no-graphics"])
        .args(["--dir", &dir("control", &control, ":ro")])
        .args(["--dir", &dir("status", &status, "")])
        .args(["--dir", &dir("vol-config", &volume, ":ro")])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let workdir = h.vm_dir("vm1").join("guest/work dir");
    assert!(
        poll_until(Duration::from_secs(20), || workdir.join("started").exists()).await,
        "the command never started"
    );
    // While the command runs: no process's argv and no run record holds the value.
    let marker = b"SECRET-MARKER";
    let has_marker = |b: &[u8]| b.windows(marker.len()).any(|w| w == marker);
    let record = serde_json::to_vec(&h.run_record("vm1").expect("run record")).unwrap();
    assert!(!has_marker(&record), "the value is in the run record");
    for proc in fs::read_dir("/proc").unwrap().filter_map(|e| e.ok()) {
        if let Ok(cmdline) = fs::read(proc.path().join("cmdline")) {
            assert!(
                !has_marker(&cmdline),
                "the value is in the argv of {proc:?}"
            );
        }
    }
    tokio::task::spawn_blocking(move || fs::write(gate, b"go\n"))
        .await
        .unwrap()
        .unwrap();
    let out = tokio::time::timeout(Duration::from_secs(30), run.wait_with_output())
        .await
        .expect("the guest never powered off")
        .unwrap();
    let (stdout, stderr) = (out.stdout, out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&stderr)
    );
    assert_eq!(fs::read(workdir.join("tricky.out")).unwrap(), value);
    assert_eq!(
        fs::read(workdir.join("arg2.out")).unwrap(),
        b"it's \"$(an arg)\"\n"
    );
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
    assert!(!workdir.join("pwned").exists(), "a value was evaluated");
    assert_eq!(
        fs::read_to_string(status.join("stdout")).unwrap(),
        "to stdout\n"
    );
    assert_eq!(
        fs::read_to_string(status.join("stderr")).unwrap(),
        "to stderr\n"
    );
    assert_eq!(fs::read_to_string(status.join("exit_code")).unwrap(), "3\n");
    assert_eq!(
        fs::read_to_string(status.join("state")).unwrap(),
        "exited\n"
    );
    // The command's lines reach the host only through the status share: `tart run`'s own
    // output (the agent's VM log, `[tart]` lines in `kubectl logs`) does not repeat them. The
    // launcher's own output stays in the guest (its console log) and carries nothing of the
    // value.
    let stdout = String::from_utf8_lossy(&stdout);
    let stderr_text = String::from_utf8_lossy(&stderr);
    assert!(!stdout.contains("to stdout"), "{stdout}");
    assert!(!stderr_text.contains("to stderr"), "{stderr_text}");
    assert!(
        stdout.contains("guest has stopped the virtual machine"),
        "{stdout}"
    );
    let console = fs::read(h.vm_dir("vm1").join("guest-console.log")).unwrap();
    let console_text = String::from_utf8_lossy(&console);
    assert!(
        console_text.contains("to stdout") && console_text.contains("to stderr"),
        "{console_text}"
    );
    for (what, bytes) in [
        ("run stdout", stdout.as_bytes().to_vec()),
        ("run stderr", stderr.clone()),
        ("the guest's console log", console.clone()),
        (
            "launcher.log",
            fs::read(status.join("launcher.log")).unwrap(),
        ),
    ] {
        assert!(!has_marker(&bytes), "the value leaked into {what}");
    }
}

#[tokio::test]
async fn stopping_the_vm_stops_the_guest_command() {
    let h = FakeHome::new().unwrap();
    h.create_vm("vm1").unwrap();
    h.set_knobs(&Knobs::new().with_vm("vm1", VmKnob::default().running_guest_launcher()))
        .unwrap();
    let shares = tempfile::tempdir().unwrap();
    let (control, status) = (shares.path().join("control"), shares.path().join("status"));
    write(&control.join("version"), b"1");
    write(&control.join("command/0"), b"/bin/sh");
    write(&control.join("command/1"), b"-c");
    write(
        &control.join("args/0"),
        b"echo $$ > pid.out; exec tail -f /dev/null",
    );
    fs::create_dir_all(&status).unwrap();
    let mut run = h
        .command(FT)
        .args(["run", "vm1", "--no-graphics"])
        .args(["--dir", &format!("control:{}:ro", control.display())])
        .args(["--dir", &format!("status:{}", status.display())])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid_file = h.vm_dir("vm1").join("pid.out");
    let read_pid = || {
        fs::read_to_string(&pid_file)
            .ok()?
            .trim()
            .parse::<i32>()
            .ok()
    };
    assert!(poll_until(Duration::from_secs(10), || read_pid().is_some()).await);
    let pid = nix::unistd::Pid::from_raw(read_pid().unwrap());
    let alive = || nix::sys::signal::kill(pid, None).is_ok();
    assert!(alive());
    // A hard stop, the way `tart stop` ends with SIGKILL: the reaper still ends the guest.
    run.start_kill().unwrap();
    run.wait().await.unwrap();
    assert!(
        poll_until(Duration::from_secs(10), || !alive()).await,
        "the guest command outlived the VM"
    );
}

/// A `sudo` for the launcher's one use (`sudo -H -n -u USER -- argv`) built on `setpriv`, so
/// the switch to the Pod's user runs on a Linux host without sudo installed.
const SUDO_SHIM: &str = r#"#!/bin/sh
[ "$1" = -H ] && [ "$2" = -n ] && [ "$3" = -u ] && [ "$5" = -- ] || exit 99
user=$4
shift 5
exec setpriv --reuid="$user" --regid="$(id -g "$user")" --clear-groups -- "$@"
"#;

#[tokio::test]
async fn a_configured_user_runs_the_command_when_the_launcher_is_root() {
    let h = FakeHome::new().unwrap();
    h.create_vm("vm1").unwrap();
    h.set_knobs(&Knobs::new().with_vm("vm1", VmKnob::default().running_guest_launcher()))
        .unwrap();
    let shares = tempfile::tempdir().unwrap();
    let (control, status, bin) = (
        shares.path().join("control"),
        shares.path().join("status"),
        shares.path().join("bin"),
    );
    write(&bin.join("sudo"), SUDO_SHIM.as_bytes());
    fs::set_permissions(bin.join("sudo"), fs::Permissions::from_mode(0o755)).unwrap();
    write(&control.join("version"), b"1");
    write(&control.join("user"), b"nobody");
    write(&control.join("workdir"), b"/home/app");
    write(&control.join("env/0"), b"V=line1\n\"$x\"\n");
    write(&control.join("command/0"), b"/bin/sh");
    write(&control.join("command/1"), b"-c");
    write(&control.join("args/0"), br#"id -un; pwd; printf %s "$V""#);
    fs::create_dir_all(&status).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = tokio::time::timeout(
        Duration::from_secs(30),
        h.command(FT)
            .env("PATH", path)
            .args(["run", "vm1", "--no-graphics"])
            .args(["--dir", &format!("control:{}:ro", control.display())])
            .args(["--dir", &format!("status:{}", status.display())])
            .stdin(Stdio::null())
            .output(),
    )
    .await
    .expect("the guest never powered off")
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        fs::read_to_string(status.join("exit_code")).unwrap(),
        "0\n",
        "{stderr}"
    );
    let root = nix::unistd::Uid::effective().is_root();
    let me = String::from_utf8(
        std::process::Command::new("id")
            .arg("-un")
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let who = if root { "nobody\n" } else { me.as_str() };
    let workdir = h.vm_dir("vm1").join("guest/home/app");
    assert_eq!(
        fs::read_to_string(status.join("stdout")).unwrap(),
        format!("{who}{}\nline1\n\"$x\"\n", workdir.display())
    );
    // The user's private copy of the environment is gone once the command runs.
    let leftovers: Vec<_> = fs::read_dir(std::env::temp_dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.metadata().is_ok_and(|m| m.is_dir())
                && fs::read(e.path().join("0")).is_ok_and(|b| b.starts_with(b"V=line1"))
        })
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// A guest root with `control` and `status` shares, for running the launcher directly.
struct Guest {
    dir: tempfile::TempDir,
}

impl Guest {
    fn new() -> Guest {
        let g = Guest {
            dir: tempfile::tempdir().unwrap(),
        };
        let mount = g.root().join("Volumes/My Shared Files");
        fs::create_dir_all(mount.join("control")).unwrap();
        fs::create_dir_all(mount.join("status")).unwrap();
        g.put("version", b"1");
        g
    }
    fn root(&self) -> std::path::PathBuf {
        self.dir.path().join("root")
    }
    fn put(&self, rel: &str, bytes: &[u8]) {
        write(
            &self
                .root()
                .join("Volumes/My Shared Files/control")
                .join(rel),
            bytes,
        );
    }
    fn status(&self, file: &str) -> Option<String> {
        fs::read_to_string(
            self.root()
                .join("Volumes/My Shared Files/status")
                .join(file),
        )
        .ok()
    }
    /// Runs the launcher against this root; returns its exit code and stdout.
    async fn launch(&self) -> (Option<i32>, String) {
        let (code, out, _) = self.launch_with(&[]).await;
        (code, out)
    }
    /// Runs the launcher with `args`; returns its exit code, stdout and stderr.
    async fn launch_with(&self, args: &[&str]) -> (Option<i32>, String, String) {
        let launcher =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../packaging/guest/tart-guest-launcher");
        let out = tokio::time::timeout(
            Duration::from_secs(20),
            tokio::process::Command::new("/bin/sh")
                .arg(launcher)
                .args(args)
                .current_dir(self.dir.path())
                .env("TART_GUEST_ROOT", self.root())
                .env("TART_GUEST_ON_EXIT", "exit")
                .env("TART_GUEST_SHARE_TIMEOUT", "0")
                .stdin(Stdio::null())
                .kill_on_drop(true)
                .output(),
        )
        .await
        .expect("launcher hung")
        .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

/// A control share file: path relative to the share, content.
type ControlFile = (&'static str, &'static [u8]);

#[tokio::test]
async fn a_malformed_control_share_fails_with_its_exit_code_and_no_command_runs() {
    let cases: &[(&str, &[ControlFile], i32, &str)] = &[
        (
            "wrong version",
            &[("version", b"2")],
            65,
            "control/version is not 1",
        ),
        (
            "subPath leaving its share",
            &[
                ("mounts/0/share", b"v"),
                ("mounts/0/path", b"/m"),
                ("mounts/0/sub", b"a/../../x"),
            ],
            65,
            "mount 0: subPath leaves its share",
        ),
        (
            "relative mountPath",
            &[("mounts/0/share", b"v"), ("mounts/0/path", b"m")],
            65,
            "mount 0: mountPath is not absolute",
        ),
        (
            "missing volume share",
            &[("mounts/0/share", b"absent"), ("mounts/0/path", b"/m")],
            69,
            "share absent did not appear within 0s",
        ),
        (
            "unknown stdin mode",
            &[("stdin", b"always")],
            65,
            "control/stdin is not open or once",
        ),
    ];
    for (what, files, code, log) in cases {
        let g = Guest::new();
        fs::create_dir_all(g.root().join("Volumes/My Shared Files/v")).unwrap();
        for (rel, bytes) in *files {
            g.put(rel, bytes);
        }
        g.put("command/0", b"/bin/true");
        let (got, _) = g.launch().await;
        assert_eq!(got, Some(*code), "{what}");
        assert_eq!(g.status("state").as_deref(), Some("failed\n"), "{what}");
        assert_eq!(
            g.status("launcher.log").unwrap(),
            format!("{log}\n"),
            "{what}"
        );
        assert_eq!(g.status("exit_code"), None, "{what}");
    }
}

#[tokio::test]
async fn a_mount_path_holding_image_files_is_not_clobbered() {
    let g = Guest::new();
    fs::create_dir_all(g.root().join("Volumes/My Shared Files/v")).unwrap();
    write(&g.root().join("etc/app/keep"), b"image file");
    g.put("mounts/0/share", b"v");
    g.put("mounts/0/path", b"/etc/app");
    g.put("command/0", b"/bin/true");
    assert_eq!(g.launch().await.0, Some(73));
    assert_eq!(
        fs::read(g.root().join("etc/app/keep")).unwrap(),
        b"image file"
    );
}

#[tokio::test]
async fn without_a_command_the_image_entry_runs_with_the_args_or_nothing_runs() {
    let g = Guest::new();
    g.put("args/0", b"one two");
    assert_eq!(g.launch().await.0, Some(0));
    assert_eq!(g.status("state").as_deref(), Some("idle\n"));
    assert_eq!(g.status("exit_code"), None);

    let entry = g.root().join("usr/local/libexec/tart-guest/entrypoint");
    write(&entry, b"#!/bin/sh\necho \"entry:$1\"\nexit 4\n");
    fs::set_permissions(&entry, fs::Permissions::from_mode(0o755)).unwrap();
    let (code, stdout) = g.launch().await;
    assert_eq!(code, Some(4));
    assert_eq!(stdout, "entry:one two\n");
    assert_eq!(g.status("exit_code").as_deref(), Some("4\n"));
}

#[tokio::test]
async fn names_a_shell_cannot_export_reach_the_command_and_reserved_names_are_refused() {
    let g = Guest::new();
    g.put("env/0", b"my.var=a\nb");
    g.put("env/1", b"PLAIN=c");
    g.put("env/2", b"my.var=last wins");
    g.put("command/0", b"/usr/bin/env");
    let (code, stdout) = g.launch().await;
    assert_eq!(code, Some(0));
    assert!(stdout.contains("\nmy.var=last wins\n"), "{stdout}");
    assert!(!stdout.contains("my.var=a\nb"), "{stdout}");
    assert!(stdout.contains("\nPLAIN=c\n"), "{stdout}");

    g.put("env/3", b"__tgl_i=9");
    assert_eq!(g.launch().await.0, Some(125));
    assert_eq!(g.status("exit_code").as_deref(), Some("125\n"));
}

#[tokio::test]
async fn the_job_marks_itself_busy_or_idle_in_the_file_the_launcher_names() {
    let g = Guest::new();
    g.put("env/0", b"TART_JOB_STATE_FILE=/elsewhere");
    g.put("command/0", b"/bin/sh");
    g.put("command/1", b"-c");
    g.put(
        "args/0",
        b"printf '%s|' \"$TART_JOB_STATE_FILE\"; cat \"$TART_JOB_STATE_FILE\"; \
          echo busy > \"$TART_JOB_STATE_FILE\"",
    );
    let (code, stdout) = g.launch().await;
    assert_eq!(code, Some(0));
    let job = g.root().join("Volumes/My Shared Files/status/job");
    assert_eq!(
        stdout,
        format!("{}|idle\n", job.display()),
        "the file is named, not hidden by the Pod's env, and starts idle"
    );
    assert_eq!(g.status("job").as_deref(), Some("busy\n"), "the job's mark");
    let mode = fs::metadata(&job).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);

    g.put("args/0", b"true");
    assert_eq!(g.launch().await.0, Some(0));
    assert_eq!(
        g.status("job").as_deref(),
        Some("idle\n"),
        "a new run does not inherit the last run's mark"
    );
}

#[tokio::test]
async fn a_job_without_stdin_reads_dev_null_and_the_relay_says_so() {
    let g = Guest::new();
    g.put("command/0", b"/bin/sh");
    g.put("args/0", b"-c");
    g.put("args/1", b"cat; echo eof");
    let (code, out) = g.launch().await;
    assert_eq!((code, out.as_str()), (Some(0), "eof\n"));
    assert!(!g.root().join("var/run/tart-guest").exists());
    let (code, _, err) = g.launch_with(&["--stdin-relay"]).await;
    assert_eq!(code, Some(69));
    assert!(err.contains("the job has no stdin"), "{err}");
}
