//! The real control plane for end-to-end tests (issue 3): etcd + kube-apiserver +
//! kube-scheduler + kube-controller-manager v1.20.2, built by `tests/cluster/build.sh` and run by
//! `tests/cluster/start.sh` on 127.0.0.1 with free ports.
//!
//! One control plane per test binary ([`ControlPlane::shared`]), started on first use with an
//! owner-pid watchdog, so it is stopped when the test binary exits however it exits. Tests
//! isolate themselves by namespace and node name ([`unique`]) and run in parallel.
//! [`ControlPlane::start_private`] gives a test its own control plane (stopped on drop), for
//! tests that stop or restart components. The scripts own processes, PKI and ports; this module
//! only calls them, reads `$RUN/env`, and builds kube clients. See docs/testing.md.
use std::{
    collections::HashMap,
    fmt,
    future::Future,
    path::{Path, PathBuf},
    process::Command,
    sync::{
        OnceLock,
        atomic::{AtomicU32, Ordering},
    },
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};
use kube::config::{KubeConfigOptions, Kubeconfig};

/// Deadline for `start.sh` (it has its own 90 s deadline; this one catches a hung script).
const START_DEADLINE: Duration = Duration::from_secs(150);
/// Deadline for `build.sh`: a cold build takes 5-12 min on the project's 2-core machines.
const BUILD_DEADLINE: Duration = Duration::from_secs(40 * 60);
/// Deadline for stopping or starting one component with `component.sh`.
const COMPONENT_DEADLINE: Duration = Duration::from_secs(90);
/// Interval between two polls of [`wait_for`].
const POLL_INTERVAL: Duration = Duration::from_millis(200);

/// The components, in the order `stop.sh` stops them.
pub const COMPONENTS: [&str; 4] = [
    "kube-apiserver",
    "kube-scheduler",
    "kube-controller-manager",
    "etcd",
];

/// A running control plane: its run dir and what `start.sh` wrote into `$RUN/env`.
#[derive(Debug)]
pub struct ControlPlane {
    run_dir: PathBuf,
    env: HashMap<String, String>,
    start_to_ready: Duration,
    /// Stop on drop (private control planes only; the shared one is left to its watchdog).
    owned: bool,
}

/// The directory with the control-plane scripts (`tests/cluster`).
pub fn scripts_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("cluster")
}

/// Runs `tests/cluster/build.sh` (idempotent: seconds when the binaries are cached) and
/// returns how long it took.
///
/// # Errors
/// When the script fails (not root on a cold cache, no apt, no network) or exceeds its deadline;
/// the error carries the script's stderr.
pub fn build() -> anyhow::Result<Duration> {
    let t0 = Instant::now();
    run_script(&scripts_dir().join("build.sh"), &[], BUILD_DEADLINE)?;
    Ok(t0.elapsed())
}

// === impl ControlPlane ===

impl ControlPlane {
    /// The control plane shared by every test in this test binary, started on first use
    /// (build.sh, then start.sh with `--owner-pid` = this process).
    ///
    /// # Panics
    /// When the control plane cannot be built or started; every caller panics with the same
    /// message, which includes the relevant log lines and the run dir.
    pub fn shared() -> &'static ControlPlane {
        static SHARED: OnceLock<Result<ControlPlane, String>> = OnceLock::new();
        let started = SHARED.get_or_init(|| {
            prune_old_run_dirs();
            let cp = build()
                .and_then(|_| Self::start_in(new_run_dir("shared")?, false, std::process::id()))
                .map_err(|e| format!("{e:#}"))?;
            eprintln!(
                "control plane: {} (logs {}, ready in {:?})",
                cp.server_url(),
                cp.logs_dir().display(),
                cp.start_to_ready
            );
            Ok(cp)
        });
        match started {
            Ok(cp) => cp,
            Err(e) => panic!("shared control plane failed to start: {e}"),
        }
    }

    /// [`ControlPlane::shared`] from async code: the first call blocks for several seconds,
    /// so it runs on tokio's blocking pool instead of stalling the test's runtime.
    ///
    /// # Panics
    /// As [`ControlPlane::shared`].
    pub async fn shared_async() -> &'static ControlPlane {
        match tokio::task::spawn_blocking(Self::shared).await {
            Ok(cp) => cp,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => panic!("control plane start was cancelled: {e}"),
        }
    }

    /// Starts a control plane of the caller's own (assumes `build()` has run). It is stopped
    /// when dropped; the owner-pid watchdog stops it if the process exits first.
    ///
    /// # Errors
    /// When `start.sh` fails; the error carries its stderr (with the failing log's tail).
    pub fn start_private(label: &str) -> anyhow::Result<ControlPlane> {
        Self::start_in(new_run_dir(label)?, true, std::process::id())
    }

    /// Like [`ControlPlane::start_private`], but the watchdog watches `owner_pid` instead of
    /// this process (to test the watchdog itself).
    ///
    /// # Errors
    /// As for [`ControlPlane::start_private`].
    pub fn start_owned_by(label: &str, owner_pid: u32) -> anyhow::Result<ControlPlane> {
        Self::start_in(new_run_dir(label)?, true, owner_pid)
    }

    fn start_in(run_dir: PathBuf, owned: bool, owner_pid: u32) -> anyhow::Result<ControlPlane> {
        let t0 = Instant::now();
        let pid = owner_pid.to_string();
        let args = ["--run", path_str(&run_dir)?, "--owner-pid", &pid];
        run_script(&scripts_dir().join("start.sh"), &args, START_DEADLINE)?;
        let start_to_ready = t0.elapsed();
        let env = parse_env(&std::fs::read_to_string(run_dir.join("env"))?);
        for key in ["SERVER", "KUBECONFIG", "APISERVER_PORT", "ETCD_PORT"] {
            if !env.contains_key(key) {
                bail!("{}/env has no {key}", run_dir.display());
            }
        }
        Ok(ControlPlane {
            run_dir,
            env,
            start_to_ready,
            owned,
        })
    }

    /// The run dir (`$RUN`): pki, args, pid files, logs.
    pub fn run_dir(&self) -> &Path {
        &self.run_dir
    }

    /// The admin kubeconfig (CN=admin, O=system:masters).
    pub fn kubeconfig_path(&self) -> PathBuf {
        PathBuf::from(&self.env["KUBECONFIG"])
    }

    /// `https://127.0.0.1:<port>`.
    pub fn server_url(&self) -> &str {
        &self.env["SERVER"]
    }

    /// The cluster CA certificate (PEM); it signs the serving and client certificates.
    pub fn ca_cert_path(&self) -> PathBuf {
        self.run_dir.join("pki/ca.crt")
    }

    /// `$RUN/logs`: `<component>.log` for each component, appended across restarts.
    pub fn logs_dir(&self) -> PathBuf {
        self.run_dir.join("logs")
    }

    /// How long `start.sh` took, from spawn to ready (`/readyz`, healthz, namespaces).
    pub fn start_to_ready(&self) -> Duration {
        self.start_to_ready
    }

    /// A value from `$RUN/env` (e.g. `ETCD_PORT`, `NODE_GRACE`).
    pub fn env_var(&self, key: &str) -> Option<&str> {
        self.env.get(key).map(String::as_str)
    }

    /// The last `lines` lines of a component's log, for failure messages.
    pub fn log_tail(&self, component: &str, lines: usize) -> String {
        let text = std::fs::read_to_string(self.logs_dir().join(format!("{component}.log")))
            .unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// The PID in `$RUN/<component>.pid`, if the file exists.
    pub fn pid_of(&self, component: &str) -> Option<u32> {
        std::fs::read_to_string(self.run_dir.join(format!("{component}.pid")))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// A kube client as the admin.
    ///
    /// # Panics
    /// When the admin kubeconfig cannot be read or used.
    pub async fn admin_client(&self) -> kube::Client {
        client_for(&self.kubeconfig_path()).await
    }

    /// A kube client from a kubeconfig file; see the free function [`client_for`].
    pub async fn client_for(&self, kubeconfig: &Path) -> kube::Client {
        client_for(kubeconfig).await
    }

    /// Mints a kubeconfig for `user` in `groups` (a client certificate signed by the cluster
    /// CA: CN=user, O=group...) and returns its path. RBAC grants nothing by default.
    ///
    /// # Panics
    /// When `mint-kubeconfig.sh` fails (e.g. a name with characters it refuses).
    pub fn mint_kubeconfig(&self, user: &str, groups: &[&str]) -> PathBuf {
        let mut args = vec![path_str(&self.run_dir).expect("utf-8 run dir"), user];
        args.extend_from_slice(groups);
        let out = run_script(
            &scripts_dir().join("mint-kubeconfig.sh"),
            &args,
            Duration::from_secs(30),
        )
        .unwrap_or_else(|e| panic!("minting a kubeconfig for {user}: {e:#}"));
        PathBuf::from(out.trim())
    }

    /// Stops kube-apiserver alone (SIGTERM, then SIGKILL after 3 s); etcd and the controllers
    /// keep running. On the shared control plane this affects every test in the binary: use it
    /// on a [`ControlPlane::start_private`] one.
    ///
    /// # Panics
    /// When `component.sh` fails or exceeds its deadline.
    pub async fn stop_apiserver(&self) {
        self.component("stop", "kube-apiserver").await;
    }

    /// Starts kube-apiserver again with its original arguments (same port, same etcd) and
    /// returns once `/readyz` is ok.
    ///
    /// # Panics
    /// When it does not become ready within the script's 60 s deadline.
    pub async fn start_apiserver(&self) {
        self.component("start", "kube-apiserver").await;
    }

    async fn component(&self, action: &str, name: &str) {
        let script = scripts_dir().join("component.sh");
        let run = tokio::process::Command::new(&script)
            .arg(&self.run_dir)
            .args([action, name])
            .kill_on_drop(true)
            .output();
        let out = tokio::time::timeout(COMPONENT_DEADLINE, run)
            .await
            .unwrap_or_else(|_| panic!("component.sh {action} {name}: no answer in 90 s"))
            .unwrap_or_else(|e| panic!("component.sh {action} {name}: {e}"));
        assert!(
            out.status.success(),
            "component.sh {action} {name} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Stops every process of this run with `stop.sh` (logs are kept).
    ///
    /// # Errors
    /// When `stop.sh` reports that something survived SIGKILL.
    pub fn stop(&self) -> anyhow::Result<()> {
        let run = path_str(&self.run_dir)?;
        run_script(
            &scripts_dir().join("stop.sh"),
            &[run],
            Duration::from_secs(90),
        )
        .map(drop)
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        if self.owned
            && let Err(e) = self.stop()
        {
            eprintln!("stopping control plane {}: {e:#}", self.run_dir.display());
        }
    }
}

/// A kube client from a kubeconfig file (e.g. one from [`ControlPlane::mint_kubeconfig`]).
///
/// # Panics
/// When the file cannot be read or does not make a valid client configuration.
pub async fn client_for(kubeconfig: &Path) -> kube::Client {
    let kc = Kubeconfig::read_from(kubeconfig)
        .unwrap_or_else(|e| panic!("reading {}: {e}", kubeconfig.display()));
    let config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .unwrap_or_else(|e| panic!("kubeconfig {}: {e}", kubeconfig.display()));
    kube::Client::try_from(config).expect("kube client from kubeconfig")
}

/// The PIDs and command lines of live (non-zombie) etcd/kube-* processes whose command line
/// mentions `run_dir`: what must be empty after `stop.sh`.
pub fn processes_of_run(run_dir: &Path) -> Vec<(u32, String)> {
    let needle = format!("{}/", run_dir.display());
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(raw) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let argv: Vec<String> = raw
            .split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        let exe = argv.first().map(|a| a.rsplit('/').next().unwrap_or(a));
        let ours = exe.is_some_and(|e| COMPONENTS.contains(&e));
        let cmdline = argv.join(" ");
        if ours && cmdline.contains(&needle) && !is_zombie(entry.path().join("stat")) {
            found.push((pid, cmdline));
        }
    }
    found
}

fn is_zombie(stat: PathBuf) -> bool {
    let text = std::fs::read_to_string(stat).unwrap_or_default();
    // Format: `pid (comm) S ...`; comm may contain spaces or parens, so split after the last ')'.
    text.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .is_none_or(|state| state == "Z")
}

/// A DNS-1123 label unique within this process and very likely across processes:
/// `<prefix>-<counter>-<random>`, lowercase, at most 63 characters.
pub fn unique(prefix: &str) -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let mut p: String = prefix
        .chars()
        .map(|c| c.to_ascii_lowercase())
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .take(40)
        .collect();
    p = p.trim_matches('-').to_owned();
    if p.is_empty() {
        p.push('t');
    }
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{p}-{n}-{:06x}", rand::random::<u32>() & 0xff_ffff)
}

/// [`wait_for`] gave up: the condition did not hold before the deadline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitTimeout {
    /// How long it polled.
    pub after: Duration,
    /// How many polls returned `None` (or did not answer in time).
    pub polls: u32,
}

impl fmt::Display for WaitTimeout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "condition not met after {:?} ({} polls)",
            self.after, self.polls
        )
    }
}

impl std::error::Error for WaitTimeout {}

/// Polls `poll` every 200 ms until it returns `Some`, for at most `deadline`. Each poll is
/// itself bounded by the time left, so a hung API call cannot outlive the deadline.
///
/// # Errors
/// [`WaitTimeout`] when the deadline passes first.
pub async fn wait_for<T, F, Fut>(deadline: Duration, mut poll: F) -> Result<T, WaitTimeout>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let t0 = tokio::time::Instant::now();
    let end = t0 + deadline;
    let mut polls = 0;
    loop {
        polls += 1;
        if let Ok(Some(v)) = tokio::time::timeout_at(end, poll()).await {
            return Ok(v);
        }
        let now = tokio::time::Instant::now();
        if now >= end {
            return Err(WaitTimeout {
                after: now - t0,
                polls,
            });
        }
        tokio::time::sleep_until((now + POLL_INTERVAL).min(end)).await;
    }
}

// === helpers ===

/// A fresh run dir under `$TMPDIR/tart-kubelet-cp/`, named after the test binary, so logs of a
/// failed run are easy to find and never collide with another process's.
fn new_run_dir(label: &str) -> anyhow::Result<PathBuf> {
    static N: AtomicU32 = AtomicU32::new(0);
    let exe = std::env::current_exe().ok();
    let bin = exe
        .as_deref()
        .and_then(|p| p.file_stem())
        .and_then(|s| s.to_str())
        .and_then(|s| s.split('-').next())
        .unwrap_or("test");
    let name = format!(
        "{bin}-{label}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    );
    let dir = std::env::temp_dir().join("tart-kubelet-cp").join(name);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

/// Removes run dirs (logs) older than 3 days that have no process left, so `$TMPDIR` does not
/// fill up with logs of old test runs.
fn prune_old_run_dirs() {
    const MAX_AGE: Duration = Duration::from_secs(3 * 24 * 3600);
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir().join("tart-kubelet-cp")) else {
        return;
    };
    for entry in entries.flatten() {
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > MAX_AGE);
        if old && processes_of_run(&entry.path()).is_empty() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

fn path_str(p: &Path) -> anyhow::Result<&str> {
    p.to_str()
        .with_context(|| format!("non-UTF-8 path {}", p.display()))
}

/// `KEY=VALUE` lines (as written by start.sh) into a map.
fn parse_env(text: &str) -> HashMap<String, String> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect()
}

/// Runs a script to completion with a deadline (the script's process group is killed when it
/// passes) and returns its stdout; stderr goes into the error on failure.
fn run_script(script: &Path, args: &[&str], deadline: Duration) -> anyhow::Result<String> {
    use std::os::unix::process::CommandExt as _;
    let out_file = tempfile::NamedTempFile::new()?;
    let err_file = tempfile::NamedTempFile::new()?;
    let mut child = Command::new(script)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(out_file.reopen()?)
        .stderr(err_file.reopen()?)
        .process_group(0)
        .spawn()
        .with_context(|| format!("spawning {}", script.display()))?;
    // std has no wait-with-timeout: a thread waits, this one waits on the channel.
    let pgid = nix::unistd::Pid::from_raw(i32::try_from(child.id())?);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    let status = match rx.recv_timeout(deadline) {
        Ok(status) => status?,
        Err(_) => {
            let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
            let _ = rx.recv();
            bail!("{} {args:?}: no exit after {deadline:?}", script.display());
        }
    };
    let stdout = std::fs::read_to_string(out_file.path())?;
    if !status.success() {
        let stderr = std::fs::read_to_string(err_file.path())?;
        bail!("{} {args:?} failed ({status}):\n{stderr}", script.display());
    }
    Ok(stdout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unique_names_are_dns_1123_labels_and_distinct() {
        let a = unique("Node_With Lease!");
        let b = unique("Node_With Lease!");
        assert_ne!(a, b);
        for n in [&a, &b, &unique(&"x".repeat(100)), &unique("--")] {
            assert!(n.len() <= 63, "{n}");
            assert!(
                n.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
                "{n}"
            );
            assert!(!n.starts_with('-') && !n.ends_with('-'), "{n}");
        }
        assert!(a.starts_with("node-with-lease-"), "{a}");
    }

    #[test]
    fn env_file_lines_become_a_map() {
        let env = parse_env("SERVER=https://127.0.0.1:1234\nKUBECONFIG=/r/kubeconfig\n\nbad\n");
        assert_eq!(env["SERVER"], "https://127.0.0.1:1234");
        assert_eq!(env["KUBECONFIG"], "/r/kubeconfig");
        assert_eq!(env.len(), 2);
    }

    #[tokio::test]
    async fn wait_for_returns_the_first_some() {
        let mut n = 0;
        let got = wait_for(Duration::from_secs(5), || {
            n += 1;
            let v = (n >= 3).then_some(n);
            async move { v }
        })
        .await;
        assert_eq!(got, Ok(3));
    }

    #[tokio::test]
    async fn wait_for_gives_up_at_the_deadline_even_if_a_poll_hangs() {
        let t0 = Instant::now();
        let got: Result<(), _> = wait_for(Duration::from_millis(300), || {
            std::future::pending::<Option<()>>()
        })
        .await;
        assert!(got.is_err());
        assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    }
}
