//! `tart-kubelet doctor --smoke IMAGE`, the first-day self-test, against fake-tart acting as
//! the guest (the real guest launcher runs the self-test's command, docs/fake-tart.md): it
//! passes on an image with the launcher baked in and on one with only the Tart Guest Agent
//! (the launcher delivered, as for a Pod); a failing clone, a guest with no launcher to be
//! had, a failed install, an unreachable guest agent, a hostile status share and Ctrl-C each
//! fail naming the step; and the VM, its guest directory and every fake-tart process are gone
//! afterwards, whatever happened.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use tart_kubelet_tests::fake::{
    AttackKind, FakeHome, GuestImage, Knobs, Rule, VmKnob, parse_json, poll_until,
    processes_of_home, small_images,
};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::ship_doctor::text;

const FT: &str = env!("CARGO_BIN_EXE_fake-tart");
const AGENT: &str = env!("CARGO_BIN_EXE_agent-under-test");
const IMAGE: &str = "ghcr.io/example/macos-smoke:1";
/// Every self-test VM: the default prefix and the smoke marker.
const SMOKE_VMS: &str = "tkl-smoke-*";

/// A fake-tart home and the agent's directories beside it.
struct Mac {
    home: FakeHome,
    dirs: tempfile::TempDir,
}

impl Mac {
    fn new(knobs: Knobs) -> Mac {
        let home = FakeHome::new().unwrap();
        home.set_knobs(&knobs).unwrap();
        Mac {
            home,
            dirs: tempfile::tempdir().unwrap(),
        }
    }

    fn guest_dir(&self) -> PathBuf {
        self.dirs.path().join("guest")
    }

    /// `doctor --smoke image` with this Mac's directories and `extra` flags.
    fn command(&self, image: &str, extra: &[&str]) -> tokio::process::Command {
        let d = self.dirs.path();
        let mut cmd = tokio::process::Command::new(AGENT);
        cmd.args(["doctor", "--smoke", image, "--tart-program", FT])
            .arg("--tart-home")
            .arg(self.home.path())
            .arg("--guest-dir")
            .arg(self.guest_dir())
            .arg("--vm-log-dir")
            .arg(d.join("vm-logs"))
            .arg("--pod-log-dir")
            .arg(d.join("pod-logs"))
            .args(["--node-name", "smoke-test"])
            .args(extra)
            .env("CI", "1")
            .kill_on_drop(true);
        cmd
    }

    async fn smoke(&self, image: &str, extra: &[&str]) -> Output {
        let run = self.command(image, extra).output();
        tokio::time::timeout(Duration::from_secs(120), run)
            .await
            .expect("the self-test finished within 120 s")
            .expect("the self-test ran")
    }

    /// Nothing of the self-test is left: no VM in `tart list`, no guest directory, no
    /// fake-tart process of the home.
    async fn assert_clean(&self, out: &str) {
        let list = self
            .home
            .tart(FT, &["list", "--format", "json"])
            .await
            .unwrap();
        let vms = parse_json(&list.stdout);
        let left: Vec<&str> = vms
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|v| v["Name"].as_str())
            .filter(|n| n.starts_with("tkl-smoke-"))
            .collect();
        assert!(left.is_empty(), "VMs left behind: {left:?}\n{out}");
        let entries: Vec<_> = std::fs::read_dir(self.guest_dir())
            .map(|d| d.flatten().map(|e| e.file_name()).collect())
            .unwrap_or_default();
        assert!(
            entries.is_empty(),
            "guest directories left: {entries:?}\n{out}"
        );
        let gone = poll_until(Duration::from_secs(10), || {
            processes_of_home(self.home.path()).is_empty()
        })
        .await;
        assert!(gone, "fake-tart processes left\n{out}");
    }
}

/// The table row of `step` (the progress lines on stderr read `step: result`).
fn row<'a>(out: &'a str, step: &str) -> &'a str {
    out.lines()
        .find(|l| l.starts_with(&format!("{step} ")))
        .unwrap_or_else(|| panic!("no `{step}` row in:\n{out}"))
}

/// The RESULT and DETAIL of `step`'s row.
fn cols(out: &str, step: &str) -> (String, String) {
    let words: Vec<&str> = row(out, step).split_whitespace().collect();
    (words[1].to_owned(), words[3..].join(" "))
}

/// The VM the self-test named on stderr.
fn vm_of(out: &str) -> String {
    let line = out
        .lines()
        .find(|l| l.starts_with("smoke test of "))
        .unwrap_or_else(|| panic!("no VM named in:\n{out}"));
    let vm = line.split(" in VM ").nth(1).unwrap();
    vm.split(' ').next().unwrap().to_owned()
}

/// Under fake-tart the guest's `/tmp` is the host's: remove a marker the guest left there.
fn remove_marker(out: &str) {
    let _ = std::fs::remove_file(Path::new("/tmp").join(format!("{}.smoke", vm_of(out))));
}

fn launcher() -> VmKnob {
    VmKnob::default().running_guest_launcher()
}

/// Every step, in order.
const STEPS: [&str; 10] = [
    "image", "clone", "set", "guest", "boot", "launcher", "exec", "command", "stop", "delete",
];

#[tokio::test]
async fn a_good_image_passes_every_step_and_leaves_only_the_pulled_image() {
    let mac = Mac::new(small_images(Knobs::new()).with_vm(SMOKE_VMS, launcher()));
    let o = mac.smoke(IMAGE, &[]).await;
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    for step in STEPS {
        assert_eq!(cols(&out, step).0, "ok", "{step}\n{out}");
    }
    assert!(
        row(&out, "launcher").contains("the image's own launcher reported")
            && row(&out, "launcher").contains("(launcher mode auto)"),
        "{out}"
    );
    assert!(
        out.contains("STEP") && out.contains("RESULT") && out.contains("DETAIL"),
        "{out}"
    );
    assert!(row(&out, "image").contains("pulled"), "{out}");
    assert!(row(&out, "command").contains("exit code 42"), "{out}");
    assert!(row(&out, "exec").contains("exit code 0"), "{out}");
    assert!(out.contains("smoke test passed"), "{out}");
    mac.assert_clean(&out).await;
    let marker = Path::new("/tmp").join(format!("{}.smoke", vm_of(&out)));
    assert!(!marker.exists(), "the command removes its marker");
    // The pulled image stays in the cache, where the agent's first Pod would pull it.
    let list = mac
        .home
        .tart(FT, &["list", "--source", "oci", "-q"])
        .await
        .unwrap();
    assert!(
        list.stdout.contains("ghcr.io/example/macos-smoke:1"),
        "{}",
        list.stdout
    );
    // A second run finds it cached and pulls nothing.
    let again = text(&mac.smoke(IMAGE, &["--json"]).await);
    assert!(again.contains(r#""step":"image""#), "{again}");
    assert!(
        again.contains("in the cache as ghcr.io/example/macos-smoke:1"),
        "{again}"
    );
    assert!(again.contains("smoke test passed"), "{again}");
    mac.assert_clean(&again).await;
}

#[tokio::test]
async fn a_failing_clone_fails_at_clone_and_skips_to_the_cleanup() {
    let knobs = small_images(Knobs::new())
        .with_vm(SMOKE_VMS, launcher())
        .with_rule(Rule::fail("clone", 1, "Error: disk unavailable"));
    let mac = Mac::new(knobs);
    let o = mac.smoke(IMAGE, &[]).await;
    let out = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("smoke test failed at step clone"), "{out}");
    assert!(row(&out, "clone").contains("disk unavailable"), "{out}");
    for step in ["set", "guest", "boot", "launcher", "exec", "command"] {
        assert_eq!(
            cols(&out, step),
            ("skipped".into(), "clone failed".into()),
            "{out}"
        );
    }
    assert_eq!(
        cols(&out, "stop"),
        ("ok".into(), "not started".into()),
        "{out}"
    );
    assert_eq!(cols(&out, "delete").0, "ok", "{out}");
    mac.assert_clean(&out).await;
}

#[tokio::test]
async fn a_guest_agent_only_image_passes_with_the_launcher_delivered() {
    // A stock image (Cirrus Labs' base): the guest agent answers `exec`, nothing reads the
    // shares until the launcher is delivered, as the Pod worker delivers it.
    let knobs = small_images(Knobs::new()).with_vm(
        SMOKE_VMS,
        VmKnob::default().guest_image(GuestImage::AgentOnly),
    );
    let mac = Mac::new(knobs);
    let o = mac.smoke(IMAGE, &[]).await;
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    for step in STEPS {
        assert_eq!(cols(&out, step).0, "ok", "{step}\n{out}");
    }
    let r = row(&out, "launcher");
    assert!(
        r.contains("the shipped launcher, delivered through the Tart Guest Agent, reported")
            && r.contains("after tart run (launcher mode auto)"),
        "{r}"
    );
    assert!(row(&out, "command").contains("exit code 42"), "{out}");
    assert!(out.contains("smoke test passed"), "{out}");
    mac.assert_clean(&out).await;
}

/// The self-test of an image whose guest is `knob`, with `args`, fails at `launcher` with
/// `detail` (the words a Pod's container would wait with), skips `exec` and `command`, stops
/// the running VM and leaves nothing behind.
async fn fails_at_launcher(knob: VmKnob, args: &[&str], detail: &str) {
    let mac = Mac::new(small_images(Knobs::new()).with_vm(SMOKE_VMS, knob));
    let o = mac.smoke(IMAGE, args).await;
    let out = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("smoke test failed at step launcher"), "{out}");
    assert_eq!(
        cols(&out, "launcher"),
        ("failed".into(), detail.into()),
        "{out}"
    );
    for step in ["exec", "command"] {
        assert_eq!(
            cols(&out, step),
            ("skipped".into(), "launcher failed".into()),
            "{out}"
        );
    }
    assert!(row(&out, "stop").contains("stopped"), "{out}");
    mac.assert_clean(&out).await;
}

#[tokio::test]
async fn a_guest_agent_only_image_in_baked_mode_fails_at_launcher_and_is_stopped() {
    // `--guest-launcher baked`: the guest agent is never used, and nothing reads the shares.
    fails_at_launcher(
        VmKnob::default().guest_image(GuestImage::AgentOnly),
        &["--smoke-timeout", "2", "--guest-launcher", "baked"],
        "the image's tart-kubelet launcher did not report within 2s (launcher mode baked); see docs/guest.md",
    )
    .await;
}

#[tokio::test]
async fn a_vanilla_image_fails_at_launcher_with_the_missing_launcher_words() {
    // Neither the launcher nor the guest agent: every delivery finds no agent.
    fails_at_launcher(
        VmKnob::default()
            .guest_image(GuestImage::Vanilla)
            .exec_unreachable_after(100),
        &["--smoke-timeout", "2"],
        "the image has neither the tart-kubelet launcher nor the Tart Guest Agent: nothing reported within 2s; see docs/guest.md",
    )
    .await;
}

#[tokio::test]
async fn a_failed_install_fails_at_launcher_with_the_workers_words() {
    // The guest agent answers, but `sudo -n` wants a password.
    fails_at_launcher(
        VmKnob::default()
            .guest_image(GuestImage::AgentOnly)
            .with_sudo_password(),
        &[],
        "installing the tart-kubelet launcher through the Tart Guest Agent failed with exit code 1 (does the exec user have passwordless sudo?); see docs/guest.md",
    )
    .await;
}

#[tokio::test]
async fn an_unreachable_guest_agent_fails_at_exec_and_the_running_vm_is_stopped() {
    let knobs =
        small_images(Knobs::new()).with_vm(SMOKE_VMS, launcher().exec_unreachable_after(100));
    let mac = Mac::new(knobs);
    let o = mac.smoke(IMAGE, &[]).await;
    let out = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("smoke test failed at step exec"), "{out}");
    assert!(row(&out, "exec").contains("Tart Guest Agent"), "{out}");
    assert!(row(&out, "command").contains("exec failed"), "{out}");
    assert!(row(&out, "stop").contains("stopped"), "{out}");
    mac.assert_clean(&out).await;
}

#[tokio::test]
async fn a_hostile_exit_code_file_is_refused_and_fails_at_command() {
    let target = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(target.path(), "42\n").unwrap();
    let how = AttackKind::Symlink(target.path().display().to_string());
    let knobs = small_images(Knobs::new())
        .with_vm(SMOKE_VMS, launcher().attacking_status(&["exit_code"], how));
    let mac = Mac::new(knobs);
    let o = mac.smoke(IMAGE, &[]).await;
    let out = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("smoke test failed at step command"), "{out}");
    let r = row(&out, "command");
    assert!(
        r.contains("no exit code (status share state: exited)"),
        "{r}"
    );
    mac.assert_clean(&out).await;
}

#[tokio::test]
async fn ctrl_c_during_exec_cleans_up_and_exits_130() {
    // A local VM as the image; the guest agent takes a minute to answer, so `exec` is under
    // way when the interrupt comes.
    let knobs = Knobs::new()
        .with_latency_scale(1.0)
        .with_boot_ms(100)
        .with_clone_ms(10)
        .with_vm(SMOKE_VMS, launcher().with_exec_delay_ms(60_000));
    let mac = Mac::new(knobs);
    mac.home.create_vm("base").unwrap();
    // Baked mode: no delivery (whose answer would also take the minute) before the `exec`.
    let mut child = mac
        .command("base", &["--guest-launcher", "baked"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = String::new();
    let booted = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(l) = lines.next_line().await.unwrap() {
            seen.push_str(&l);
            seen.push('\n');
            if l.starts_with("launcher: ok") {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(booted.ok(), Some(true), "{seen}");
    let pid = nix::unistd::Pid::from_raw(child.id().unwrap() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let rest = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(l) = lines.next_line().await.unwrap() {
            seen.push_str(&l);
            seen.push('\n');
        }
        child.wait_with_output().await.unwrap()
    })
    .await
    .expect("the self-test ended within 60 s of the interrupt");
    let out = format!("{}{seen}", text(&rest));
    remove_marker(&out);
    assert_eq!(rest.status.code(), Some(130), "{out}");
    assert!(out.contains("smoke test interrupted at step exec"), "{out}");
    assert_eq!(cols(&out, "exec").0, "interrupted", "{out}");
    assert_eq!(
        cols(&out, "command"),
        ("skipped".into(), "interrupted".into()),
        "{out}"
    );
    assert!(row(&out, "stop").contains("stopped"), "{out}");
    mac.assert_clean(&out).await;
    assert!(
        mac.home.vm_exists("base"),
        "the image it did not create is untouched"
    );
}
