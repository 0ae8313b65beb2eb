//! fake-tart homes and knobs for tests: [`FakeHome`] is a temporary `TART_HOME` whose knob
//! file (`fake-tart/knobs.json`, read by `fake-tart` on every invocation) is written from a
//! typed [`Knobs`] value, plus helpers that read VM state straight from disk.
//!
//! The knob schema itself lives in `fake/knobs.rs`; the `fake-tart` binary uses this library's
//! copy, so the two cannot drift. The binary's path is not known here: pass
//! `env!("CARGO_BIN_EXE_fake-tart")` from an integration test.

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use nix::fcntl::{FcntlArg, fcntl};
use tempfile::TempDir;

/// The shared registry bandwidth's bookkeeping, as fake-tart does it: count the pulls active in
/// a `registry_dir`, or hold a place there as another Mac's pull would.
pub mod bandwidth;
mod guest;
pub mod knobs;
mod network;

pub use guest::GuestImage;

pub use knobs::{
    Action, AttackKind, Auth, BridgeInterface, DEFAULT_BOOT_MS, DEFAULT_CLONE_MS,
    DEFAULT_PULL_MB_PER_S, DEFAULT_SHUTDOWN_MS, DEFAULT_VERSION, EndpointState, FailAction,
    GuestAttack, GuestVitals, ImageKnob, Knobs, Rule, SoftnetSetup, VmKnob,
    default_bridge_interfaces, glob_match,
};

/// Whether a local VM name is one of the agent's golden base VMs (`<prefix>golden-<hex>`), which
/// outlive their Pods by design.
pub fn is_golden(vm: &str) -> bool {
    vm.contains("golden-")
}

/// `knobs` with a small default image (1 GB compressed, 20 GB disk), so pulls in tests are
/// quick at any latency scale.
pub fn small_images(knobs: Knobs) -> Knobs {
    knobs.with_image("default", ImageKnob::sized(1.0, 20))
}

/// Parses fake-tart's JSON output.
///
/// # Panics
/// With the text, when it is not JSON.
pub fn parse_json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("bad JSON ({e}): {text}"))
}

/// A temporary `TART_HOME` for one test. On drop, every `run` process still holding one of its
/// VMs is SIGKILLed and the directory is removed.
#[derive(Debug)]
pub struct FakeHome {
    dir: TempDir,
}

impl FakeHome {
    /// A fresh, empty home (no knob file: all defaults, instant latency).
    pub fn new() -> io::Result<FakeHome> {
        Ok(FakeHome {
            dir: tempfile::Builder::new()
                .prefix("fake-tart-home-")
                .tempdir()?,
        })
    }

    /// The `TART_HOME` path.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `fake-tart/knobs.json`.
    pub fn knobs_path(&self) -> PathBuf {
        self.path().join("fake-tart").join("knobs.json")
    }

    /// Writes the knob file atomically (temp file + rename), so a fake-tart process starting at
    /// the same moment reads either the old or the new knobs. Rule counters are kept: a rule
    /// that is unchanged stays consumed; an edited rule starts again (see [`Self::reset_counters`]).
    pub fn set_knobs(&self, knobs: &Knobs) -> io::Result<()> {
        let dir = self.path().join("fake-tart");
        fs::create_dir_all(&dir)?;
        let json = serde_json::to_vec_pretty(knobs).map_err(io::Error::other)?;
        let tmp = dir.join(format!("knobs.json.tmp.{}", rand::random::<u64>()));
        fs::write(&tmp, json)?;
        fs::rename(tmp, self.knobs_path())
    }

    /// Forgets how often each rule with `times` was used.
    pub fn reset_counters(&self) -> io::Result<()> {
        match fs::remove_file(self.path().join("fake-tart").join("counters.json")) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    /// The environment a fake-tart child needs: `TART_HOME` and `CI=1`.
    pub fn envs(&self) -> [(&'static str, std::ffi::OsString); 2] {
        [
            ("TART_HOME", self.path().as_os_str().to_owned()),
            ("CI", "1".into()),
        ]
    }

    /// A `tokio` command running `fake_tart` against this home (with `CI=1`), killed on drop.
    pub fn command(&self, fake_tart: impl AsRef<Path>) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(fake_tart.as_ref());
        cmd.envs(self.envs())
            .env_remove("TART_REGISTRY_USERNAME")
            .env_remove("TART_REGISTRY_PASSWORD");
        cmd.env_remove("TART_REGISTRY_HOSTNAME").kill_on_drop(true);
        cmd
    }

    /// `vms/<name>`.
    pub fn vm_dir(&self, name: &str) -> PathBuf {
        self.path().join("vms").join(name)
    }

    /// Whether local VM `name` exists (has a `config.json`).
    pub fn vm_exists(&self, name: &str) -> bool {
        self.vm_dir(name).join("config.json").is_file()
    }

    /// The VM's `config.json` as JSON.
    pub fn vm_config(&self, name: &str) -> io::Result<serde_json::Value> {
        let bytes = fs::read(self.vm_dir(name).join("config.json"))?;
        serde_json::from_slice(&bytes).map_err(io::Error::other)
    }

    /// The VM's MAC address from its `config.json`.
    pub fn vm_mac(&self, name: &str) -> Option<String> {
        self.vm_config(name)
            .ok()?
            .get("macAddress")?
            .as_str()
            .map(String::from)
    }

    /// The PID of the `run` process holding the VM's `config.json` fcntl lock (`F_GETLK`), if
    /// any: exactly how `tart list`/`stop` decide "running".
    pub fn run_pid(&self, name: &str) -> Option<i32> {
        let f = File::open(self.vm_dir(name).join("config.json")).ok()?;
        let mut fl = libc::flock {
            l_type: libc::F_WRLCK as libc::c_short,
            l_whence: libc::SEEK_SET as libc::c_short,
            l_start: 0,
            l_len: 0,
            l_pid: 0,
        };
        fcntl(&f, FcntlArg::F_GETLK(&mut fl)).ok()?;
        (fl.l_type != libc::F_UNLCK as libc::c_short && fl.l_pid != 0).then_some(fl.l_pid)
    }

    /// Whether a `run` process holds the VM.
    pub fn is_running(&self, name: &str) -> bool {
        self.run_pid(name).is_some()
    }

    /// `vms/<name>/.fake-run.json`, written by `run` once it holds the lock: `pid`,
    /// `started_at_ms`, `suspendable` and the full `args` it was started with.
    pub fn run_record(&self, name: &str) -> Option<serde_json::Value> {
        serde_json::from_slice(&fs::read(self.vm_dir(name).join(".fake-run.json")).ok()?).ok()
    }

    /// Creates a stopped local VM directly on disk (darwin, 4 CPUs, 8 GiB, sparse 50 GB disk),
    /// as `tart create` would leave it.
    pub fn create_vm(&self, name: &str) -> io::Result<()> {
        let dir = self.vm_dir(name);
        fs::create_dir_all(&dir)?;
        let digest = md5_bytes(name);
        let mac = format!(
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            (digest[0] & 0xfe) | 0x02,
            digest[1],
            digest[2],
            digest[3],
            digest[4],
            digest[5]
        );
        let config = serde_json::json!({
            "version": 1, "os": "darwin", "arch": "arm64",
            "cpuCountMin": 4, "cpuCount": 4,
            "memorySizeMin": 4096u64 << 20, "memorySize": 8192u64 << 20,
            "macAddress": mac, "display": {"width": 1024, "height": 768}, "diskFormat": "raw",
        });
        fs::write(
            dir.join("config.json"),
            serde_json::to_vec_pretty(&config).map_err(io::Error::other)?,
        )?;
        File::create(dir.join("disk.img"))?.set_len(50_000_000_000)?;
        File::create(dir.join("nvram.bin"))?.set_len(128 * 1024)?;
        Ok(())
    }

    /// Names of the entries in `tmp/` (pull and clone working directories).
    pub fn tmp_entries(&self) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(self.path().join("tmp"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        names.sort();
        names
    }

    /// `tmp/<md5(remote)>`: where a pull of canonical name `remote` downloads
    /// (docs/reference/tart-cli.md §2.1).
    pub fn pull_tmp_dir(&self, canonical_remote: &str) -> PathBuf {
        let hex: String = md5_bytes(canonical_remote)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        self.path().join("tmp").join(hex)
    }
}

/// One finished fake-tart invocation, output decoded lossily.
#[derive(Debug, Clone)]
pub struct TartOutput {
    /// Exit code (`None` if killed by a signal).
    pub code: Option<i32>,
    /// stdout, lossily decoded.
    pub stdout: String,
    /// stderr, lossily decoded.
    pub stderr: String,
}

impl TartOutput {
    /// stdout lines.
    pub fn lines(&self) -> Vec<&str> {
        self.stdout.lines().collect()
    }
}

/// Deadline for one [`FakeHome::tart`] call.
pub const TART_CALL_DEADLINE: Duration = Duration::from_secs(60);

impl FakeHome {
    /// Runs `fake_tart args...` against this home to completion (deadline
    /// [`TART_CALL_DEADLINE`]; on expiry the child is killed and `TimedOut` returned).
    pub async fn tart(&self, fake_tart: impl AsRef<Path>, args: &[&str]) -> io::Result<TartOutput> {
        let mut cmd = self.command(fake_tart);
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let child = cmd.spawn()?;
        let out = tokio::time::timeout(TART_CALL_DEADLINE, child.wait_with_output())
            .await
            .map_err(|_| {
                io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("fake-tart {args:?} timed out"),
                )
            })??;
        Ok(TartOutput {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        })
    }
}

/// Polls `cond` every 10 ms until it holds or `within` passes; returns whether it held.
pub async fn poll_until(within: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        if cond() {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

impl FakeHome {
    /// SIGKILLs every `run` process holding a VM of this home (found with `F_GETLK`), like a
    /// host power-off. Called on drop, so detached VMs never outlive their test.
    pub fn kill_running_vms(&self) {
        let Ok(entries) = fs::read_dir(self.path().join("vms")) else {
            return;
        };
        for entry in entries.flatten() {
            if let Some(name) = entry.file_name().to_str()
                && let Some(pid) = self.run_pid(name)
            {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        }
    }
}

impl Drop for FakeHome {
    fn drop(&mut self) {
        self.kill_running_vms();
    }
}

/// PIDs of live processes whose environment has `TART_HOME=<home>`: every fake-tart process
/// of that home whoever started it, the children of a killed agent included (Linux `/proc`;
/// zombies do not count).
pub fn processes_of_home(home: &Path) -> Vec<i32> {
    let want = format!("TART_HOME={}", home.display()).into_bytes();
    crate::cluster::live_pids()
        .into_iter()
        .filter(|pid| {
            fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|kv| kv == want.as_slice()))
        })
        .filter_map(|pid| i32::try_from(pid).ok())
        .collect()
}

fn md5_bytes(s: &str) -> [u8; 16] {
    use md5::{Digest, Md5};
    Md5::digest(s.as_bytes()).into()
}

// === Knobs builders ===

impl Knobs {
    /// All defaults (instant latency, every remote image exists).
    pub fn new() -> Knobs {
        Knobs::default()
    }
    /// What `--version` prints.
    pub fn with_version(mut self, v: &str) -> Knobs {
        self.version = Some(v.to_string());
        self
    }
    /// Multiplies every simulated duration (1.0 = realistic).
    pub fn with_latency_scale(mut self, scale: f64) -> Knobs {
        self.latency_scale = Some(scale);
        self
    }
    /// Simulated download speed before scaling.
    pub fn with_pull_mb_per_s(mut self, mb: f64) -> Knobs {
        self.pull_mb_per_s = Some(mb);
        self
    }
    /// Pulls of every home naming `dir` share `mb_per_s` of registry bandwidth (before
    /// scaling), each capped by its own `pull_mb_per_s`.
    pub fn with_shared_registry(mut self, dir: &Path, mb_per_s: f64) -> Knobs {
        self.registry_dir = Some(dir.to_path_buf());
        self.registry_mb_per_s = Some(mb_per_s);
        self
    }
    /// Simulated clone time before scaling.
    pub fn with_clone_ms(mut self, ms: u64) -> Knobs {
        self.clone_ms = Some(ms);
        self
    }
    /// Simulated boot time (default IP delay) before scaling.
    pub fn with_boot_ms(mut self, ms: u64) -> Knobs {
        self.boot_ms = Some(ms);
        self
    }
    /// `run` fails with the VM-limit error when this many other VMs are running.
    pub fn with_max_running_vms(mut self, n: usize) -> Knobs {
        self.max_running_vms = Some(n);
        self
    }
    /// The volume's free space auto-prune sees, GB (default unlimited: it never prunes).
    pub fn with_volume_available_gb(mut self, gb: f64) -> Knobs {
        self.volume_available_gb = Some(gb);
        self
    }
    /// Adds (or replaces) a remote image; `"default"` applies to every other name.
    pub fn with_image(mut self, name: &str, image: ImageKnob) -> Knobs {
        self.images.insert(name.to_string(), image);
        self
    }
    /// Appends a failure-injection rule.
    pub fn with_rule(mut self, rule: Rule) -> Knobs {
        self.rules.push(rule);
        self
    }
    /// Sets the per-VM knobs for a name glob.
    pub fn with_vm(mut self, glob: &str, vm: VmKnob) -> Knobs {
        self.vms.insert(glob.to_string(), vm);
        self
    }
}

impl ImageKnob {
    /// An image of this compressed and disk size (GB).
    pub fn sized(compressed_gb: f64, disk_gb: u64) -> ImageKnob {
        ImageKnob {
            compressed_gb: Some(compressed_gb),
            disk_gb: Some(disk_gb),
            ..ImageKnob::default()
        }
    }
    /// The registry answers 404.
    pub fn missing() -> ImageKnob {
        ImageKnob {
            missing: Some(true),
            ..ImageKnob::default()
        }
    }
    /// The registry requires these credentials.
    pub fn with_auth(mut self, username: &str, password: &str) -> ImageKnob {
        self.auth = Some(Auth {
            username: username.into(),
            password: password.into(),
        });
        self
    }
    /// A Linux image (default darwin).
    pub fn linux(mut self) -> ImageKnob {
        self.os = Some("linux".into());
        self
    }
    /// Moves the tag to another digest.
    pub fn with_revision(mut self, revision: u32) -> ImageKnob {
        self.revision = Some(revision);
        self
    }
}

impl Rule {
    /// A rule for `op` ("*" = any) with no VM filter, applying forever.
    pub fn new(op: &str, action: Action) -> Rule {
        Rule {
            op: op.to_string(),
            vm: None,
            times: None,
            action,
        }
    }
    /// `op` hangs until killed.
    pub fn hang(op: &str) -> Rule {
        Rule::new(op, Action::Hang(true))
    }
    /// `op` starts a helper in its process group holding its stdout/stderr, then hangs.
    pub fn hang_with_child(op: &str) -> Rule {
        Rule::new(op, Action::HangWithChild(true))
    }
    /// `op` writes `stderr` and exits with `code` before doing anything.
    pub fn fail(op: &str, code: i32, stderr: &str) -> Rule {
        Rule::new(
            op,
            Action::Fail(FailAction {
                code,
                stderr: stderr.to_string(),
            }),
        )
    }
    /// `op` waits `ms` (not scaled) first.
    pub fn delay(op: &str, ms: u64) -> Rule {
        Rule::new(op, Action::DelayMs(ms))
    }
    /// pull (or an uncached clone) stops making progress at `percent`.
    pub fn stall(op: &str, percent: u32) -> Rule {
        Rule::new(op, Action::StallAtPercent(percent))
    }
    /// pull (or an uncached clone) times out at `percent`: five retry lines, then
    /// `Error: The request timed out.`, exit 1.
    pub fn timeout_at(op: &str, percent: u32) -> Rule {
        Rule::new(op, Action::TimeoutAtPercent(percent))
    }
    /// `run` fails with the VM-limit error after taking the lock.
    pub fn vm_limit() -> Rule {
        Rule::new("run", Action::VmLimit(true))
    }
    /// `run` fails with "Failed to lock auxiliary storage." after taking the lock.
    pub fn aux_storage_locked() -> Rule {
        Rule::new("run", Action::AuxStorageLocked(true))
    }
    /// pull/clone fail with ENOSPC.
    pub fn no_space(op: &str) -> Rule {
        Rule::new(op, Action::NoSpace(true))
    }
    /// `op` writes invalid UTF-8 on stdout and stderr, then behaves normally.
    pub fn invalid_utf8(op: &str) -> Rule {
        Rule::new(op, Action::InvalidUtf8(true))
    }
    /// Only for VM (or image, for pull) names matching `glob`.
    pub fn for_vm(mut self, glob: &str) -> Rule {
        self.vm = Some(glob.to_string());
        self
    }
    /// Only `n` times in total, across processes.
    pub fn times(mut self, n: u32) -> Rule {
        self.times = Some(n);
        self
    }
}

impl VmKnob {
    /// The guest stops by itself `ms` (scaled) after start: code 0 = shutdown, else crash.
    pub fn exits_after(mut self, ms: u64, code: i32) -> VmKnob {
        self.guest_exit_after_ms = Some(ms);
        self.guest_exit_code = Some(code);
        self
    }
    /// `run` ignores SIGINT (so `tart stop` has to SIGKILL).
    pub fn ignoring_sigint(mut self) -> VmKnob {
        self.ignore_sigint = Some(true);
        self
    }
    /// The guest ignores the SIGUSR2 shutdown request.
    pub fn ignoring_sigusr2(mut self) -> VmKnob {
        self.ignore_sigusr2 = Some(true);
        self
    }
    /// The guest takes `ms` (scaled) to shut down after SIGUSR2.
    pub fn with_shutdown_ms(mut self, ms: u64) -> VmKnob {
        self.shutdown_ms = Some(ms);
        self
    }
    /// The IP appears `ms` (scaled) after start.
    pub fn with_ip_delay_ms(mut self, ms: u64) -> VmKnob {
        self.ip_delay_ms = Some(ms);
        self
    }
    /// The IP never appears.
    pub fn without_ip(mut self) -> VmKnob {
        self.ip_never = Some(true);
        self
    }
    /// `ip` answers even when the VM is stopped (stale DHCP lease).
    pub fn with_stale_lease(mut self) -> VmKnob {
        self.stale_lease = Some(true);
        self
    }
    /// `exec` cannot reach the guest agent; it fails after `connect_ms` (scaled).
    pub fn exec_unreachable_after(mut self, connect_ms: u64) -> VmKnob {
        self.exec_unreachable = Some(true);
        self.exec_connect_ms = Some(connect_ms);
        self
    }
    /// `run` acts as the guest: it runs the real guest launcher (`packaging/guest/`) against
    /// its `--dir` shares, and the launcher's exit powers the VM off (docs/guest.md).
    pub fn running_guest_launcher(mut self) -> VmKnob {
        self.guest_launcher = Some(true);
        self
    }

    /// A hostile guest: once its launcher has ended, it does `how` to these files of its
    /// status share (knob `guest_attack`).
    pub fn attacking_status(mut self, files: &[&str], how: AttackKind) -> VmKnob {
        self.guest_attack = Some(GuestAttack {
            files: files.iter().map(|f| (*f).to_owned()).collect(),
            how,
        });
        self
    }
}
