//! The duplicate-agent fault: a second agent for a simulated Mac with the same node name,
//! kubeconfig, flags and `TART_HOME` (the operator's mistake of a copied launchd plist), with
//! an admin port and VM log directory of its own so that it gets as far as the Lease. It must
//! refuse to run and exit non-zero by itself. Its tart program is a wrapper that records every
//! command line before exec'ing the same fake-tart, so whether it touched a VM is known
//! exactly, not sampled. Its log is kept in the control plane's log directory.

use std::{
    path::{Path, PathBuf},
    process::Stdio,
    time::{Duration, Instant},
};

use anyhow::Context as _;
use serde::Serialize;
use tempfile::TempDir;
use tokio::process::{Child, Command};

use crate::{agent::free_port, sandbox::agents::SimMac};

/// How long a duplicate may run before it is killed and counted as not having refused.
pub const DEADLINE: Duration = Duration::from_secs(30);

/// tart subcommands that create, start, change or remove a VM.
const VM_COMMANDS: [&str; 6] = ["clone", "run", "set", "stop", "delete", "suspend"];

/// One duplicate agent as the report shows it.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct DuplicateRecord {
    /// The node name it was started with.
    pub node: String,
    /// Its exit code; `null` when a signal ended it (the sandbox's kill past [`DEADLINE`]).
    pub exit_code: Option<i32>,
    /// It exited before [`DEADLINE`] without being signalled.
    pub exited_by_itself: bool,
    /// From spawn to exit, seconds.
    pub seconds: f64,
    /// The last line of its log.
    pub message: String,
    /// Every tart command line it ran.
    pub tart_commands: Vec<String>,
}

impl DuplicateRecord {
    /// Why this duplicate breaks the invariant, or `None`: it must exit non-zero by itself
    /// and must not have run a tart command that touches a VM.
    pub fn violation(&self) -> Option<String> {
        let touched: Vec<&String> = self
            .tart_commands
            .iter()
            .filter(|c| {
                c.split_whitespace()
                    .next()
                    .is_some_and(|sub| VM_COMMANDS.contains(&sub))
            })
            .collect();
        let why = if !self.exited_by_itself {
            format!("still running after {} s (killed)", DEADLINE.as_secs())
        } else if self.exit_code == Some(0) {
            "exited 0".to_owned()
        } else if !touched.is_empty() {
            format!("ran {touched:?}")
        } else {
            return None;
        };
        Some(format!("duplicate for {}: {why}", self.node))
    }
}

/// The message an agent's log ends with (an agent that refuses to run prints why last), at
/// most 400 characters.
pub fn last_message(log: &str) -> String {
    let line = log
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .unwrap_or_default();
    line.chars().take(400).collect()
}

/// A duplicate agent while it runs.
pub struct Duplicate {
    /// Index of the simulated Mac it duplicates.
    pub mac: usize,
    node: String,
    child: Child,
    started: Instant,
    log: PathBuf,
    commands: PathBuf,
    _dir: TempDir,
}

impl Duplicate {
    /// Starts a duplicate of `m`'s agent (Mac index `mac`); its log goes to
    /// `logs_dir/duplicate-<n>-<node>.log`.
    ///
    /// # Errors
    /// Temp dir, port, wrapper or spawn failures.
    pub fn spawn(mac: usize, m: &SimMac, logs_dir: &Path, n: usize) -> anyhow::Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("duplicate-agent-")
            .tempdir()?;
        let commands = dir.path().join("tart-commands.log");
        let wrapper = dir.path().join("tart");
        std::fs::write(
            &wrapper,
            format!(
                "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{}'\nexec '{}' \"$@\"\n",
                commands.display(),
                m.launch.fake_tart.display()
            ),
        )?;
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755))?;
        }
        let log = logs_dir.join(format!("duplicate-{n}-{}.log", m.node));
        let out = std::fs::File::create(&log).context("creating the duplicate's log")?;
        let mut cmd = Command::new(&m.launch.agent);
        cmd.arg("run")
            .arg("--kubeconfig")
            .arg(&m.launch.kubeconfig)
            .args(["--node-name", &m.node])
            .arg("--tart-program")
            .arg(&wrapper)
            .arg("--tart-home")
            .arg(m.agent.home().path())
            .arg("--vm-log-dir")
            .arg(dir.path().join("vm-logs"))
            .args(["--admin-addr", &free_port()?.to_string()])
            .args(["--log-format", "text"])
            .args(&m.launch.extra_args)
            .env_remove("KUBECONFIG")
            .env("CI", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::from(out.try_clone()?))
            .stderr(Stdio::from(out))
            .process_group(0)
            .kill_on_drop(true);
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("TART_KUBELET_") {
                cmd.env_remove(k);
            }
        }
        let child = cmd.spawn().context("spawning the duplicate agent")?;
        Ok(Self {
            mac,
            node: m.node.clone(),
            child,
            started: Instant::now(),
            log,
            commands,
            _dir: dir,
        })
    }

    /// The record once it has exited; past [`DEADLINE`] it is killed (with its process group)
    /// and recorded as not having exited by itself. `None` while it may still run.
    pub async fn poll(&mut self) -> Option<DuplicateRecord> {
        let status = match self.child.try_wait() {
            Ok(Some(st)) => st,
            Ok(None) if self.started.elapsed() < DEADLINE => return None,
            _ => return Some(self.kill().await),
        };
        Some(self.record(status.code(), status.code().is_some()))
    }

    /// Kills it if it still runs (the run is ending) and returns its record.
    pub async fn finish(mut self) -> DuplicateRecord {
        match self.child.try_wait() {
            Ok(Some(st)) => self.record(st.code(), st.code().is_some()),
            _ => self.kill().await,
        }
    }

    async fn kill(&mut self) -> DuplicateRecord {
        if let Some(pid) = self.child.id() {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        let _ = tokio::time::timeout(Duration::from_secs(10), self.child.wait()).await;
        self.record(None, false)
    }

    fn record(&self, exit_code: Option<i32>, exited_by_itself: bool) -> DuplicateRecord {
        let log = std::fs::read(&self.log)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        DuplicateRecord {
            node: self.node.clone(),
            exit_code,
            exited_by_itself,
            seconds: self.started.elapsed().as_secs_f64(),
            message: last_message(&log),
            tart_commands: std::fs::read_to_string(&self.commands)
                .map(|t| t.lines().map(String::from).collect())
                .unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests;
