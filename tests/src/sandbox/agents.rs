//! The sandbox's simulated Mac minis: for each, a `fake-tart` home with realistic, scaled
//! latencies, a guest and a Pod-log directory of its own (`--guest-dir`, `--pod-log-dir`, under
//! [`dirs_root`]) and a `tart-kubelet` process started through the test harness
//! ([`crate::agent::Agent`]) under the least-privilege RBAC.

use std::{
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use tempfile::TempDir;

use crate::{
    agent::{Agent, AgentOptions},
    fake::{FakeHome, Knobs},
};

/// The agents' `--node-status-check-interval`: how often each compares its Node's status with
/// the server's copy. A Node must be `Ready` again within it after an API server restart.
pub const NODE_STATUS_PERIOD: Duration = Duration::from_secs(10);

/// Paths of the binaries the sandbox drives, next to the sandbox binary itself.
pub struct Binaries {
    pub fake_tart: PathBuf,
    /// `agent-under-test` (the tart-kubelet binary).
    pub agent: PathBuf,
}

impl Binaries {
    /// Finds them beside the running executable.
    pub fn beside_me() -> anyhow::Result<Binaries> {
        let me = std::env::current_exe()?;
        let dir = me.parent().unwrap_or(Path::new("."));
        let b = Binaries {
            fake_tart: dir.join("fake-tart"),
            agent: dir.join("agent-under-test"),
        };
        for p in [&b.fake_tart, &b.agent] {
            anyhow::ensure!(
                p.exists(),
                "{} not found: build it with `cargo build -p tart-kubelet-tests --bins`",
                p.display()
            );
        }
        Ok(b)
    }
}

/// Where the agents' guest and Pod-log directories go: the tmpfs `/dev/shm` when it exists,
/// unless `on_disk`, else the sandbox's `TMPDIR`. A Mac keeps them on APFS, where creating a
/// file costs microseconds; an ext4 without a journal (as on this project's test machines)
/// makes each new inode skip every inode freed in the last 30 s, and a sandbox run frees
/// thousands, so there a Pod's start would measure the test machine's file system
/// (docs/sandbox.md).
pub fn dirs_root(on_disk: bool) -> PathBuf {
    let shm = Path::new("/dev/shm");
    if !on_disk && shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

/// The kind of file system under `path` for the report: `tmpfs` or `disk`.
pub fn file_system_kind(path: &Path) -> &'static str {
    match nix::sys::statfs::statfs(path) {
        Ok(fs) if fs.filesystem_type() == nix::sys::statfs::TMPFS_MAGIC => "tmpfs",
        Ok(_) => "disk",
        Err(_) => "unknown",
    }
}

/// What an agent of a simulated Mac was started with (a duplicate agent is started the same
/// way).
#[derive(Debug, Clone)]
pub struct Launch {
    /// `agent-under-test`.
    pub agent: PathBuf,
    pub fake_tart: PathBuf,
    /// The agents' kubeconfig.
    pub kubeconfig: PathBuf,
    /// Arguments after the harness's own (slots, capacity, deadlines, intervals).
    pub extra_args: Vec<String>,
}

/// One simulated Mac mini.
pub struct SimMac {
    pub node: String,
    /// The agent process.
    pub agent: Agent,
    /// Knobs currently written to its home (chaos adds rules).
    pub knobs: Knobs,
    /// Restarts done (chaos).
    pub restarts: u32,
    /// CPU seconds of earlier incarnations.
    pub cpu_before: f64,
    /// When the first incarnation started.
    pub started: Instant,
    /// How its agent was started.
    pub launch: Launch,
    /// The agent's `--guest-dir` (removed with the Mac).
    guest_dir: TempDir,
    /// The agent's `--pod-log-dir` (removed with the Mac).
    _pod_log_dir: TempDir,
    /// The agent's `--config` file, with the sandbox's VM profile (removed with the Mac).
    _config_dir: TempDir,
}

impl SimMac {
    /// Starts a Mac named `node` with `knobs` and extra agent arguments.
    pub async fn start(
        node: &str,
        bins: &Binaries,
        kubeconfig: &Path,
        knobs: Knobs,
        extra_args: Vec<String>,
        dirs_root: &Path,
    ) -> anyhow::Result<SimMac> {
        let home = FakeHome::new()?;
        home.set_knobs(&knobs)?;
        let guest_dir = tempfile::Builder::new()
            .prefix("sandbox-guest-")
            .tempdir_in(dirs_root)?;
        let pod_log_dir = tempfile::Builder::new()
            .prefix("sandbox-pod-logs-")
            .tempdir_in(dirs_root)?;
        let config_dir = tempfile::Builder::new()
            .prefix("sandbox-config-")
            .tempdir()?;
        let config = super::profile::write_agent_config(config_dir.path())?;
        let mut extra_args = extra_args;
        extra_args.extend([
            "--config".to_string(),
            config.display().to_string(),
            "--guest-dir".to_string(),
            guest_dir.path().display().to_string(),
            "--pod-log-dir".to_string(),
            pod_log_dir.path().display().to_string(),
        ]);
        let launch = Launch {
            agent: bins.agent.clone(),
            fake_tart: bins.fake_tart.clone(),
            kubeconfig: kubeconfig.to_path_buf(),
            extra_args,
        };
        let opts = AgentOptions::new(&bins.agent, &bins.fake_tart, kubeconfig, node)
            .args(launch.extra_args.clone());
        let agent = Agent::start_with_home(opts, home).await?;
        Ok(SimMac {
            node: node.into(),
            agent,
            knobs,
            restarts: 0,
            cpu_before: 0.0,
            started: Instant::now(),
            launch,
            guest_dir,
            _pod_log_dir: pod_log_dir,
            _config_dir: config_dir,
        })
    }

    /// The agent's `--guest-dir`: one directory per VM, holding its shares.
    pub fn guest_dir(&self) -> &Path {
        self.guest_dir.path()
    }

    /// Rewrites the knob file from `self.knobs`.
    pub fn write_knobs(&self) -> anyhow::Result<()> {
        Ok(self.agent.home().set_knobs(&self.knobs)?)
    }

    /// SIGKILL the agent (its VMs keep running), then start it again; keeps its CPU time.
    pub async fn kill_and_restart(&mut self) -> anyhow::Result<()> {
        if let Some((_, _, cpu)) = self.agent.pid().and_then(super::probe::process_usage) {
            self.cpu_before += cpu;
        }
        self.agent.sigkill().await?;
        self.agent.restart()?;
        self.restarts += 1;
        Ok(())
    }

    /// SIGTERM and wait up to `grace`; past it, SIGKILL. Returns whether it exited on its own.
    pub async fn stop(&mut self, grace: Duration) -> bool {
        let clean = self.agent.sigterm().is_ok() && self.agent.wait_exit(grace).await.is_ok();
        if !clean {
            let _ = self.agent.sigkill().await;
        }
        clean
    }

    /// Kills whatever of this home is still alive after its agent stopped (cleanup after
    /// Ctrl-C or a failed run): `tart run` processes holding a VM lock, with their groups, and
    /// any other fake-tart process (a tart command a SIGKILLed agent left behind, say).
    /// Returns how many of each there were.
    pub fn kill_leftovers(&self) -> (usize, usize) {
        use nix::sys::signal::{Signal::SIGKILL, kill, killpg};
        use nix::unistd::Pid;
        let home = self.agent.home();
        let vms: Vec<i32> = std::fs::read_dir(home.path().join("vms"))
            .map(|rd| {
                rd.flatten()
                    .filter_map(|e| home.run_pid(&e.file_name().to_string_lossy()))
                    .collect()
            })
            .unwrap_or_default();
        for pid in &vms {
            let _ = killpg(Pid::from_raw(*pid), SIGKILL);
            let _ = kill(Pid::from_raw(*pid), SIGKILL);
        }
        let others: Vec<i32> = crate::fake::processes_of_home(home.path())
            .into_iter()
            .filter(|p| !vms.contains(p))
            .collect();
        for pid in &others {
            let _ = kill(Pid::from_raw(*pid), SIGKILL);
        }
        (vms.len(), others.len())
    }
}
