//! `tart-kubelet install` / `uninstall`: the `--dry-run` output is exactly the golden plan, and
//! the real executor (run against a stand-in `launchctl` that behaves like launchd: `bootout`
//! returns before the job is gone and `bootstrap` fails with "5: Input/output error" while it
//! is still loaded) waits for the old job to go, is idempotent, and writes a root-owned 0644
//! plist. `uninstall --purge` on a fake-tart home removes the agent's VMs (stopped first) and
//! files and nothing else, and refuses, before changing anything, a configuration naming
//! `$HOME`.
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The agent binary with an environment free of TART_KUBELET_* settings.
fn agent(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_agent-under-test"));
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("TART_KUBELET_") {
            c.env_remove(k);
        }
    }
    c.args(args);
    c
}

fn ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn install_dry_run_prints_the_golden_plan_with_the_checked_in_plist() {
    let out = ok(agent(&[
        "install",
        "--dry-run",
        "--user",
        "admin",
        "--home",
        "/Users/admin",
        "--binary",
        "/opt/homebrew/bin/tart-kubelet",
    ])
    .output()
    .unwrap());
    let plist = std::fs::read_to_string(repo().join("launchd/tart-kubelet.daemon.plist")).unwrap();
    let want = format!(
        "# tart-kubelet install --dry-run: nothing was changed. Plan:\n\
         1. mkdir -p /Users/admin/Library/Logs/tart-kubelet && chown admin /Users/admin/Library/Logs/tart-kubelet\n\
         2. write /Library/LaunchDaemons/dev.tart-kubelet.agent.plist (owner root:wheel, mode 0644, {} bytes):\n\
         {plist}\
         3. if `launchctl print system/dev.tart-kubelet.agent` succeeds: launchctl bootout system/dev.tart-kubelet.agent\n\
         4. poll `launchctl print system/dev.tart-kubelet.agent` until it fails (deadline 60 s)\n\
         5. launchctl enable system/dev.tart-kubelet.agent\n\
         6. launchctl bootstrap system /Library/LaunchDaemons/dev.tart-kubelet.agent.plist\n\
         7. poll `launchctl print system/dev.tart-kubelet.agent` until it shows a pid (deadline 60 s)\n",
        plist.len()
    );
    assert_eq!(out, want);
}

#[test]
fn uninstall_dry_run_prints_bootout_wait_and_remove() {
    let out = ok(agent(&["uninstall", "--dry-run", "--wait-timeout", "30"])
        .output()
        .unwrap());
    assert_eq!(
        out,
        "# tart-kubelet uninstall --dry-run: nothing was changed. Plan:\n\
         1. if `launchctl print system/dev.tart-kubelet.agent` succeeds: launchctl bootout system/dev.tart-kubelet.agent\n\
         2. poll `launchctl print system/dev.tart-kubelet.agent` until it fails (deadline 30 s)\n\
         3. rm -f /Library/LaunchDaemons/dev.tart-kubelet.agent.plist\n"
    );
}

#[test]
fn install_dry_run_with_the_example_config_passes_its_absolute_path() {
    let example = repo()
        .join("packaging/config.example.toml")
        .canonicalize()
        .unwrap();
    let out = ok(agent(&[
        "install",
        "--dry-run",
        "--user",
        "admin",
        "--home",
        "/Users/admin",
        "--config",
        example.to_str().unwrap(),
    ])
    .output()
    .unwrap());
    assert!(out.contains(&format!(
        "<string>--config</string>\n    <string>{}</string>",
        example.display()
    )));
    // The example's log_file directory becomes launchd's log directory.
    assert!(
        out.contains("<string>/Users/admin/Library/Logs/tart-kubelet/launchd.stderr.log</string>")
    );
}

#[test]
fn install_refuses_a_relative_binary_path() {
    let out = agent(&[
        "install",
        "--dry-run",
        "--user",
        "admin",
        "--home",
        "/Users/admin",
        "--binary",
        "bin/tart-kubelet",
    ])
    .output()
    .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("must be an absolute path"));
}

#[test]
fn real_install_without_launchctl_is_refused_off_macos() {
    if cfg!(target_os = "macos") {
        return;
    }
    let out = agent(&["install", "--user", "root", "--home", "/root"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("only --dry-run works"));
}

/// A stand-in for launchctl keeping its state in `$FAKE_LAUNCHCTL_DIR`: `bootout` returns
/// at once but the job only disappears after `$GONE_AFTER` more `print`s.
const FAKE_LAUNCHCTL: &str = r#"#!/bin/sh
d="$FAKE_LAUNCHCTL_DIR"
echo "$*" >> "$d/calls"
case "$1" in
  print)
    if [ ! -f "$d/loaded" ]; then echo "Could not find service \"$2\" in domain for system" >&2; exit 113; fi
    if [ -f "$d/going" ]; then
      n=$(cat "$d/going")
      if [ "$n" -le 0 ]; then rm -f "$d/loaded" "$d/going"; echo "Could not find service" >&2; exit 113; fi
      echo $((n - 1)) > "$d/going"
      printf '%s = {\n\tstate = running\n\tpid = 4242\n}\n' "$2"; exit 0
    fi
    printf '%s = {\n\tstate = running\n\tpid = 4243\n\tlast exit code = (never exited)\n}\n' "$2"; exit 0 ;;
  bootout)
    [ -f "$d/loaded" ] || { echo "Boot-out failed: 3: No such process" >&2; exit 3; }
    echo "${GONE_AFTER:-3}" > "$d/going"; exit 0 ;;
  enable) exit 0 ;;
  bootstrap)
    if [ -f "$d/loaded" ]; then echo "Bootstrap failed: 5: Input/output error" >&2; exit 5; fi
    cp "$3" "$d/bootstrapped.plist"; touch "$d/loaded"; exit 0 ;;
esac
echo "unexpected: $*" >&2; exit 64
"#;

struct Stage {
    dir: tempfile::TempDir,
}

impl Stage {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let lc = dir.path().join("launchctl");
        std::fs::write(&lc, FAKE_LAUNCHCTL).unwrap();
        std::fs::set_permissions(&lc, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::create_dir(dir.path().join("state")).unwrap();
        std::fs::write(dir.path().join("config.toml"), "vm_slots = 2\n").unwrap();
        Stage { dir }
    }

    fn p(&self, rel: &str) -> String {
        self.dir.path().join(rel).to_string_lossy().into_owned()
    }

    fn run(&self, sub: &str, extra: &[&str], gone_after: u32) -> Output {
        let (lc, plists, state) = (
            self.p("launchctl"),
            self.p("LaunchDaemons"),
            self.p("state"),
        );
        let mut args = vec![sub, "--launchctl", &lc, "--plist-dir", &plists];
        if !extra.contains(&"--wait-timeout") {
            args.extend(["--wait-timeout", "20"]);
        }
        let (config, logs, home) = (self.p("config.toml"), self.p("logs"), self.p(""));
        if sub == "install" {
            args.extend([
                "--user",
                "root",
                "--home",
                &home,
                "--log-dir",
                &logs,
                "--config",
                &config,
            ]);
            args.extend(["--binary", "/usr/local/bin/tart-kubelet"]);
        }
        args.extend_from_slice(extra);
        agent(&args)
            .env("FAKE_LAUNCHCTL_DIR", &state)
            .env("GONE_AFTER", gone_after.to_string())
            .output()
            .unwrap()
    }

    fn calls(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.path().join("state/calls"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }
}

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

#[test]
fn reinstall_waits_until_the_old_job_is_gone_before_bootstrapping() {
    if !is_root() {
        eprintln!("skipped: the executor chowns the plist to root and needs root");
        return;
    }
    let s = Stage::new();
    ok(s.run("install", &[], 3));
    let plist = Path::new(&s.p("LaunchDaemons")).join("dev.tart-kubelet.agent.plist");
    let meta = std::fs::metadata(&plist).unwrap();
    assert_eq!(
        (meta.uid(), meta.gid(), meta.mode() & 0o7777),
        (0, 0, 0o644)
    );
    assert_eq!(
        std::fs::read(&plist).unwrap(),
        std::fs::read(s.p("state/bootstrapped.plist")).unwrap()
    );
    assert!(std::fs::metadata(s.p("logs")).unwrap().is_dir());
    let first = s.calls();
    assert_eq!(
        first,
        [
            // Nothing loaded: the check and one poll of the wait both fail at once.
            "print system/dev.tart-kubelet.agent",
            "print system/dev.tart-kubelet.agent",
            "enable system/dev.tart-kubelet.agent",
            &format!("bootstrap system {}", plist.display()),
            "print system/dev.tart-kubelet.agent",
        ]
    );

    // Second install over a loaded job: bootout, then poll until print fails (3 more prints
    // succeed in the stand-in), and only then bootstrap; otherwise bootstrap exits 5.
    ok(s.run("install", &["--exit-timeout", "90"], 3));
    let calls = s.calls()[first.len()..].to_vec();
    let bootout = calls
        .iter()
        .position(|c| c.starts_with("bootout"))
        .expect("bootout");
    let bootstrap = calls
        .iter()
        .position(|c| c.starts_with("bootstrap"))
        .expect("bootstrap");
    let polls = calls[bootout..bootstrap]
        .iter()
        .filter(|c| c.starts_with("print"))
        .count();
    assert!(polls >= 4, "bootstrap after only {polls} polls: {calls:?}");
    assert!(
        std::fs::read_to_string(&plist)
            .unwrap()
            .contains("<integer>90</integer>")
    );
}

#[test]
fn install_gives_up_when_the_old_job_never_goes_away() {
    if !is_root() {
        eprintln!("skipped: the executor chowns the plist to root and needs root");
        return;
    }
    let s = Stage::new();
    ok(s.run("install", &[], 3));
    let t = std::time::Instant::now();
    let out = s.run("install", &["--wait-timeout", "2"], 1_000_000);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("to be gone after bootout"), "{err}");
    assert!(t.elapsed() < std::time::Duration::from_secs(30));
    assert!(!s.calls().iter().skip(5).any(|c| c.starts_with("bootstrap")));
}

#[test]
fn uninstall_unloads_removes_the_plist_and_is_idempotent() {
    if !is_root() {
        eprintln!("skipped: the executor chowns the plist to root and needs root");
        return;
    }
    let s = Stage::new();
    ok(s.run("install", &[], 2));
    let plist = Path::new(&s.p("LaunchDaemons")).join("dev.tart-kubelet.agent.plist");
    assert!(plist.exists());
    ok(s.run("uninstall", &[], 2));
    assert!(!plist.exists());
    assert!(
        !Path::new(&s.p("state/loaded")).exists(),
        "job still loaded"
    );
    let n = s.calls().len();
    ok(s.run("uninstall", &[], 2));
    // Nothing loaded: only prints (the check, the wait), no bootout.
    let again = &s.calls()[n..];
    assert!(
        !again.is_empty()
            && again
                .iter()
                .all(|c| c == "print system/dev.tart-kubelet.agent"),
        "{again:?}"
    );
}

// === uninstall --purge on a fake-tart home ===

const FT: &str = env!("CARGO_BIN_EXE_fake-tart");
const POD_VM_RUNNING: &str = "tkl-0f6c7a1e-2b6d-4f0e-9a51-0c1d2e3f4a5b";
const POD_VM_STOPPED: &str = "tkl-6a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d";
const GOLDEN: &str = "tkl-golden-0123456789abcdef0123456789abc";
/// Local VMs the agent did not create: one with another name, one with the prefix but no UUID.
const NOT_OURS: [&str; 2] = ["macos-sequoia-base", "tkl-hand-made"];

/// The Mac of an installed agent: a fake-tart home with the agent's VMs (one running) and two
/// that are not its, a cached image, and the agent's directories and files under a user home.
struct Mac {
    stage: Stage,
    tart: tart_kubelet_tests::fake::FakeHome,
    run: tokio::process::Child,
}

impl Mac {
    async fn new() -> Mac {
        use tart_kubelet_tests::fake::{FakeHome, ImageKnob, Knobs};
        let stage = Stage::new();
        let tart = FakeHome::new().unwrap();
        tart.set_knobs(
            &Knobs::new()
                .with_latency_scale(0.001)
                .with_image("default", ImageKnob::sized(0.01, 20)),
        )
        .unwrap();
        let pull = tart
            .tart(FT, &["pull", "ghcr.io/acme/macos:1"])
            .await
            .unwrap();
        assert_eq!(pull.code, Some(0), "{}", pull.stderr);
        for vm in [POD_VM_RUNNING, POD_VM_STOPPED, GOLDEN]
            .iter()
            .chain(&NOT_OURS)
        {
            tart.create_vm(vm).unwrap();
        }
        let run = tart
            .command(FT)
            .args(["run", POD_VM_RUNNING, "--no-graphics"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        assert!(
            tart_kubelet_tests::fake::poll_until(std::time::Duration::from_secs(10), || tart
                .run_record(POD_VM_RUNNING)
                .is_some())
            .await,
            "the VM never ran"
        );
        let home = Path::new(&stage.p("home")).to_path_buf();
        for f in [
            ".tart-kubelet/guest/tkl-0f6c7a1e-2b6d-4f0e-9a51-0c1d2e3f4a5b/control/env/TOKEN",
            ".tart-kubelet/vm-logs/tkl-0f6c7a1e-2b6d-4f0e-9a51-0c1d2e3f4a5b.log",
            ".tart-kubelet/pod-logs/default_p_0f6c7a1e-2b6d-4f0e-9a51-0c1d2e3f4a5b/main/0.log",
            ".tart-kubelet/pki/kubelet-server-current.pem",
            "Library/Logs/tart-kubelet/agent.log",
            "Library/Logs/tart-kubelet/agent.log.1",
            "Library/Logs/tart-kubelet/launchd.stderr.log",
            ".kube/tart-kubelet.kubeconfig",
        ] {
            let p = home.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "x").unwrap();
        }
        std::fs::write(
            stage.p("agent.toml"),
            format!(
                "tart_program = {FT:?}\ntart_home = {:?}\nkubeconfig = {:?}\nlog_file = {:?}\n",
                tart.path(),
                home.join(".kube/tart-kubelet.kubeconfig"),
                home.join("Library/Logs/tart-kubelet/agent.log"),
            ),
        )
        .unwrap();
        Mac { stage, tart, run }
    }

    fn home(&self, rel: &str) -> PathBuf {
        Path::new(&self.stage.p("home")).join(rel)
    }

    fn uninstall(&self, extra: &[&str]) -> Output {
        let (config, home) = (self.stage.p("agent.toml"), self.stage.p("home"));
        let mut args = vec!["--purge", "--config", &config, "--user", "root"];
        args.extend(["--home", &home]);
        args.extend_from_slice(extra);
        self.stage.run("uninstall", &args, 2)
    }

    fn cache(&self) -> PathBuf {
        self.tart.path().join("cache/OCIs")
    }
}

#[tokio::test]
async fn purge_removes_the_agents_vms_and_files_and_nothing_else() {
    if !is_root() {
        eprintln!("skipped: the executor chowns the plist to root and needs root");
        return;
    }
    let mut mac = Mac::new().await;
    ok(mac.stage.run("install", &[], 2));
    let out = ok(mac.uninstall(&[]));

    // The job first, then the VMs: the running one was stopped, then deleted.
    assert!(
        out.starts_with("uninstalled dev.tart-kubelet.agent\n"),
        "{out}"
    );
    assert!(
        out.contains(&format!("removed VM {POD_VM_RUNNING} (stopped first)\n")),
        "{out}"
    );
    for vm in [POD_VM_RUNNING, POD_VM_STOPPED, GOLDEN] {
        assert!(!mac.tart.vm_exists(vm), "{vm} left behind");
        assert!(out.contains(&format!("removed VM {vm}")), "{out}");
    }
    let exit = tokio::time::timeout(std::time::Duration::from_secs(15), mac.run.wait())
        .await
        .expect("tart run still alive")
        .unwrap();
    assert!(exit.success(), "{exit:?}");
    for vm in NOT_OURS {
        assert!(mac.tart.vm_exists(vm), "{vm} was not the agent's");
    }
    assert!(
        out.contains("kept    2 local VM(s) not named by this agent"),
        "{out}"
    );

    for gone in [
        ".tart-kubelet",
        "Library/Logs/tart-kubelet/agent.log",
        "Library/Logs/tart-kubelet/agent.log.1",
        "Library/Logs/tart-kubelet",
    ] {
        assert!(!mac.home(gone).exists(), "{gone} left behind\n{out}");
    }
    assert!(mac.home(".kube/tart-kubelet.kubeconfig").is_file());
    assert!(Path::new(&mac.stage.p("agent.toml")).is_file());
    assert!(
        mac.cache().join("ghcr.io/acme/macos").is_dir(),
        "cache removed without the flag"
    );
    assert!(out.contains("kept    OCI image cache"), "{out}");

    // Again with --purge-images: the cache goes, nothing else of the agent is left, the other
    // VMs stay.
    let out = ok(mac.uninstall(&["--purge-images"]));
    assert!(!mac.cache().exists(), "{out}");
    assert!(out.contains("removed OCI image cache"), "{out}");
    assert!(!out.contains("removed VM"), "{out}");
    assert!(out.contains("absent  guest directories"), "{out}");
    for vm in NOT_OURS {
        assert!(mac.tart.vm_exists(vm));
    }
}

#[tokio::test]
async fn purge_refuses_a_configuration_naming_home_and_changes_nothing() {
    if !is_root() {
        eprintln!("skipped: the executor chowns the plist to root and needs root");
        return;
    }
    let mac = Mac::new().await;
    ok(mac.stage.run("install", &[], 2));
    let calls = mac.stage.calls().len();
    let out = mac.uninstall(&["--pod-log-dir", &mac.stage.p("home")]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("refusing to purge, nothing was removed: pod_log_dir")
            && err.contains("is $HOME"),
        "{err}"
    );
    // Not even the job was touched.
    assert_eq!(mac.stage.calls().len(), calls);
    assert!(Path::new(&mac.stage.p("LaunchDaemons/dev.tart-kubelet.agent.plist")).exists());
    assert!(mac.tart.vm_exists(POD_VM_STOPPED));
    assert!(mac.home(".tart-kubelet/guest").is_dir());
}

#[test]
fn purge_dry_run_lists_what_it_would_remove_and_keep() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("agent.toml");
    std::fs::write(&cfg, "vm_name_prefix = \"mac1-\"\n").unwrap();
    let out = ok(agent(&[
        "uninstall",
        "--dry-run",
        "--purge",
        "--purge-images",
        "--config",
        cfg.to_str().unwrap(),
        "--user",
        "admin",
        "--home",
        "/Users/admin",
    ])
    .output()
    .unwrap());
    for want in [
        "3. rm -f /Library/LaunchDaemons/dev.tart-kubelet.agent.plist\npurge:\n",
        "- stop, then delete, every local VM named mac1-<pod uid> or mac1-golden-<digest hex> in TART_HOME /Users/admin/.tart\n",
        "- rm -rf /Users/admin/.tart-kubelet/guest (guest directories (Secret values))\n",
        "- rm -rf /Users/admin/.tart/cache/OCIs (OCI image cache)\n",
        &format!("- keep {} (configuration file)\n", cfg.display()),
    ] {
        assert!(out.contains(want), "{want:?} not in\n{out}");
    }
}

#[test]
fn purge_images_without_purge_is_a_usage_error() {
    let out = agent(&["uninstall", "--dry-run", "--purge-images"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--purge"));
}
