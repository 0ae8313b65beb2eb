//! Harness for running the agent binary (`agent-under-test`) as a child process against the
//! real control plane and a `fake-tart` home.
//!
//! Integration tests pass the binary paths (`env!("CARGO_BIN_EXE_agent-under-test")`,
//! `env!("CARGO_BIN_EXE_fake-tart")` are only set there). Each [`Agent`] gets its own temp dir
//! (log file, VM logs), its own `TART_HOME` ([`FakeHome`]) and a free admin port. The child is
//! killed when the [`Agent`] is dropped; VMs it started are the `FakeHome`'s business.

use std::{
    ffi::OsString,
    net::SocketAddr,
    path::{Path, PathBuf},
    process::{ExitStatus, Stdio},
    time::Duration,
};

use anyhow::{Context as _, bail};
use nix::{sys::signal::Signal, unistd::Pid};
use tempfile::TempDir;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    process::{Child, Command},
};

use crate::fake::FakeHome;

mod ports;
pub use ports::free_port;

/// Deadline of one HTTP request to the admin endpoint.
const HTTP_DEADLINE: Duration = Duration::from_secs(10);

/// How to start an agent.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    /// `agent-under-test` binary.
    pub bin: PathBuf,
    /// `fake-tart` binary (or any tart program).
    pub tart_program: PathBuf,
    /// Kubeconfig of the agent's identity (mint it; never the admin's).
    pub kubeconfig: PathBuf,
    pub node_name: String,
    /// Extra command-line arguments (e.g. `--lease-renew-interval 2s`).
    pub extra_args: Vec<String>,
}

impl AgentOptions {
    /// Options with no extra arguments.
    pub fn new(
        bin: impl Into<PathBuf>,
        tart_program: impl Into<PathBuf>,
        kubeconfig: impl Into<PathBuf>,
        node_name: &str,
    ) -> Self {
        Self {
            bin: bin.into(),
            tart_program: tart_program.into(),
            kubeconfig: kubeconfig.into(),
            node_name: node_name.into(),
            extra_args: Vec::new(),
        }
    }

    /// Append arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.extra_args.extend(args.into_iter().map(Into::into));
        self
    }
}

/// A response from the admin endpoint.
#[derive(Debug, Clone)]
pub struct HttpResponse {
    pub status: u16,
    /// Raw header block.
    pub headers: String,
    pub body: String,
}

/// A running (or stopped) agent child process.
#[derive(Debug)]
pub struct Agent {
    opts: AgentOptions,
    home: FakeHome,
    dir: TempDir,
    admin_addr: SocketAddr,
    child: Option<Child>,
}

impl Agent {
    /// Start the agent with a fresh `FakeHome`.
    ///
    /// # Errors
    /// Temp dir, port or spawn failures.
    pub async fn start(opts: AgentOptions) -> anyhow::Result<Agent> {
        Self::start_with_home(opts, FakeHome::new()?).await
    }

    /// Start the agent on an existing `FakeHome` (knobs already set).
    ///
    /// # Errors
    /// Temp dir, port or spawn failures.
    pub async fn start_with_home(opts: AgentOptions, home: FakeHome) -> anyhow::Result<Agent> {
        let dir = tempfile::Builder::new().prefix("agent-").tempdir()?;
        let admin_addr = free_port()?;
        let mut agent = Agent {
            opts,
            home,
            dir,
            admin_addr,
            child: None,
        };
        agent.spawn()?;
        Ok(agent)
    }

    fn args(&self) -> Vec<OsString> {
        self.args_with(self.admin_addr, &self.dir.path().join("vm-logs"))
    }

    fn args_with(&self, admin_addr: SocketAddr, vm_log_dir: &Path) -> Vec<OsString> {
        let mut a: Vec<OsString> = vec![
            "run".into(),
            "--kubeconfig".into(),
            self.opts.kubeconfig.clone().into(),
            "--node-name".into(),
            self.opts.node_name.clone().into(),
            "--tart-program".into(),
            self.opts.tart_program.clone().into(),
            "--tart-home".into(),
            self.home.path().into(),
            "--vm-log-dir".into(),
            vm_log_dir.into(),
            // Without certificate files the serving certificate is requested into this
            // directory; each agent has its own (never the user's ~/.tart-kubelet/pki).
            "--cert-dir".into(),
            vm_log_dir.with_file_name("pki").into(),
            "--admin-addr".into(),
            admin_addr.to_string().into(),
            "--log-format".into(),
            "text".into(),
            // TART_HOME sits on the build host's volume, whose use is not the simulated Mac's:
            // the image budget would evict images between Pods on a full CI disk. Only a
            // cache budget (`--image-cache-budget`) evicts in tests.
            "--image-gc-high-threshold".into(),
            "100".into(),
            "--image-gc-low-threshold".into(),
            "100".into(),
        ];
        a.extend(self.opts.extra_args.iter().map(OsString::from));
        a
    }

    fn spawn(&mut self) -> anyhow::Result<()> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .context("opening the agent log")?;
        let mut cmd = Command::new(&self.opts.bin);
        cmd.args(self.args())
            .env_remove("KUBECONFIG")
            .env("CI", "1")
            .env("RUST_BACKTRACE", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::from(log.try_clone()?))
            .stderr(Stdio::from(log))
            // A group of its own, as under launchd: a terminal's Ctrl-C meant for the sandbox
            // or a test run must not stop the agent before it has torn its Pods down.
            .process_group(0)
            .kill_on_drop(true);
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("TART_KUBELET_") {
                cmd.env_remove(k);
            }
        }
        self.child = Some(
            cmd.spawn()
                .with_context(|| format!("spawning {}", self.opts.bin.display()))?,
        );
        Ok(())
    }

    /// A second agent with this one's options and `TART_HOME` (the mistake of starting two
    /// agents for one Mac), with its own admin port and VM log directory under `dir`; not
    /// started, output not redirected.
    ///
    /// # Errors
    /// No free port.
    pub fn duplicate_command(&self, dir: &Path) -> anyhow::Result<Command> {
        let mut cmd = Command::new(&self.opts.bin);
        cmd.args(self.args_with(free_port()?, &dir.join("vm-logs")))
            .env_remove("KUBECONFIG")
            .env("CI", "1")
            .stdin(Stdio::null())
            .process_group(0)
            .kill_on_drop(true);
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("TART_KUBELET_") {
                cmd.env_remove(k);
            }
        }
        Ok(cmd)
    }

    /// The agent's `TART_HOME` (set knobs here).
    pub fn home(&self) -> &FakeHome {
        &self.home
    }

    pub fn node_name(&self) -> &str {
        &self.opts.node_name
    }

    /// The admin endpoint address.
    pub fn admin_addr(&self) -> SocketAddr {
        self.admin_addr
    }

    /// Path of the combined stdout/stderr log (kept across restarts).
    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("agent.log")
    }

    /// The log so far.
    pub fn log(&self) -> String {
        std::fs::read(self.log_path())
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    }

    /// The last `n` log lines (for assertion messages).
    pub fn log_tail(&self, n: usize) -> String {
        let log = self.log();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }

    /// The child's PID while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().and_then(Child::id)
    }

    /// `GET path` on the admin endpoint.
    ///
    /// # Errors
    /// Connection failures, a malformed response, or no answer within 10 s.
    pub async fn get(&self, path: &str) -> anyhow::Result<HttpResponse> {
        http_get(self.admin_addr, path, None).await
    }

    /// `GET path` with an `Accept` header (e.g. what Prometheus sends for OpenMetrics).
    ///
    /// # Errors
    /// As [`Agent::get`].
    pub async fn get_accept(&self, path: &str, accept: &str) -> anyhow::Result<HttpResponse> {
        http_get(self.admin_addr, path, Some(accept)).await
    }

    /// `/metrics` body (fails unless 200).
    ///
    /// # Errors
    /// As [`Agent::get`], or a non-200 status.
    pub async fn metrics(&self) -> anyhow::Result<String> {
        let r = self.get("/metrics").await?;
        if r.status != 200 {
            bail!("/metrics answered {}", r.status);
        }
        Ok(r.body)
    }

    /// The value of the first sample whose line starts with `series` (e.g.
    /// `tart_kubelet_node_lease_renewals_total{outcome="ok"}`).
    ///
    /// # Errors
    /// As [`Agent::metrics`], or the series is absent.
    pub async fn metric(&self, series: &str) -> anyhow::Result<f64> {
        let text = self.metrics().await?;
        sample(&text, series).with_context(|| format!("no sample {series}"))
    }

    /// Poll `/readyz` until it answers 200, at most `within`.
    ///
    /// # Errors
    /// Not ready in time (the error carries the last body and the log tail).
    pub async fn wait_ready(&self, within: Duration) -> anyhow::Result<()> {
        let end = tokio::time::Instant::now() + within;
        let mut last;
        loop {
            match self.get("/readyz").await {
                Ok(r) if r.status == 200 => return Ok(()),
                Ok(r) => last = r.body,
                Err(e) => last = format!("{e:#}"),
            }
            if tokio::time::Instant::now() >= end {
                bail!(
                    "agent not ready after {within:?}: {last}\n{}",
                    self.log_tail(30)
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Send SIGTERM.
    ///
    /// # Errors
    /// Not running, or `kill(2)` failed.
    pub fn sigterm(&self) -> anyhow::Result<()> {
        self.signal(Signal::SIGTERM)
    }

    /// Send SIGKILL and reap the child.
    ///
    /// # Errors
    /// Not running, or `kill(2)` failed.
    pub async fn sigkill(&mut self) -> anyhow::Result<()> {
        self.signal(Signal::SIGKILL)?;
        self.wait_exit(Duration::from_secs(10)).await?;
        Ok(())
    }

    fn signal(&self, sig: Signal) -> anyhow::Result<()> {
        let pid = self.pid().context("agent is not running")?;
        nix::sys::signal::kill(Pid::from_raw(pid as i32), sig)?;
        Ok(())
    }

    /// Wait for the child to exit, at most `within`.
    ///
    /// # Errors
    /// Not running, or still running after `within`.
    pub async fn wait_exit(&mut self, within: Duration) -> anyhow::Result<ExitStatus> {
        let child = self.child.as_mut().context("agent is not running")?;
        let st = tokio::time::timeout(within, child.wait())
            .await
            .with_context(|| format!("agent still running after {within:?}"))??;
        self.child = None;
        Ok(st)
    }

    /// Start the agent again with the same options, home and port (after it exited).
    ///
    /// # Errors
    /// Still running, or spawn failure.
    pub fn restart(&mut self) -> anyhow::Result<()> {
        if self.child.is_some() {
            bail!("agent is still running; stop it first");
        }
        self.spawn()
    }
}

/// The value of the first sample line starting with `series` followed by a space.
pub fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

/// Minimal HTTP/1.1 `GET` with `Connection: close` and a deadline.
///
/// # Errors
/// Connection failure, timeout, or a response without a status line.
pub async fn http_get(
    addr: SocketAddr,
    path: &str,
    accept: Option<&str>,
) -> anyhow::Result<HttpResponse> {
    let fut = async {
        let mut s = tokio::net::TcpStream::connect(addr).await?;
        let accept = accept
            .map(|a| format!("Accept: {a}\r\n"))
            .unwrap_or_default();
        let req =
            format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n{accept}Connection: close\r\n\r\n");
        s.write_all(req.as_bytes()).await?;
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).await?;
        anyhow::Ok(String::from_utf8_lossy(&raw).into_owned())
    };
    let raw = tokio::time::timeout(HTTP_DEADLINE, fut)
        .await
        .with_context(|| format!("GET {path}: no answer within {HTTP_DEADLINE:?}"))??;
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((raw.as_str(), ""));
    let status: u16 = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .with_context(|| format!("GET {path}: bad status line in {head:?}"))?;
    let chunked = head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_owned()
    };
    Ok(HttpResponse {
        status,
        headers: head.to_owned(),
        body,
    })
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].trim_start_matches("\r\n");
    }
    out
}

/// The host-check facts the agent reads instead of the macOS commands
/// (`--host-checks-file`), which a test changes while the agent runs: take the GUI session
/// away, lock the keychain, fill the DHCP lease table. Starts healthy.
#[derive(Debug)]
pub struct HostChecksFile {
    dir: TempDir,
}

/// One set of host-check facts (see docs/node.md, "Host readiness").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostFacts {
    /// The user has an Aqua session.
    pub gui_session: bool,
    /// The login keychain is usable.
    pub keychain: bool,
    /// Active DHCP leases in Tart's NAT subnet.
    pub dhcp_leases_used: u32,
}

impl HostFacts {
    /// A host that can start VMs.
    pub const HEALTHY: HostFacts = HostFacts {
        gui_session: true,
        keychain: true,
        dhcp_leases_used: 3,
    };
}

impl HostChecksFile {
    /// A file with healthy facts in a temp dir of its own.
    ///
    /// # Errors
    /// Temp dir or write failures.
    pub fn new() -> std::io::Result<Self> {
        let f = Self {
            dir: tempfile::Builder::new().prefix("host-checks-").tempdir()?,
        };
        f.set(HostFacts::HEALTHY)?;
        Ok(f)
    }

    /// The file's path.
    pub fn path(&self) -> PathBuf {
        self.dir.path().join("host-checks")
    }

    /// `--host-checks-file <path>`.
    pub fn args(&self) -> [String; 2] {
        [
            "--host-checks-file".into(),
            self.path().display().to_string(),
        ]
    }

    /// Replace the facts (written whole and renamed, so the agent never reads half a file).
    ///
    /// # Errors
    /// Write failures.
    pub fn set(&self, facts: HostFacts) -> std::io::Result<()> {
        let text = format!(
            "gui_session={}\nkeychain={}\ndhcp_leases_used={}\n",
            if facts.gui_session { "Aqua" } else { "none" },
            if facts.keychain { "ok" } else { "locked" },
            facts.dhcp_leases_used
        );
        let tmp = self.dir.path().join("host-checks.tmp");
        std::fs::write(&tmp, text)?;
        std::fs::rename(tmp, self.path())
    }
}

/// Path of `packaging/kubernetes/rbac.yaml`.
pub fn rbac_yaml() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("packaging/kubernetes/rbac.yaml")
}

#[cfg(test)]
mod tests;
