//! The real control plane for end-to-end tests: etcd + kube-apiserver +
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
    path::{Path, PathBuf},
    sync::{
        OnceLock,
        atomic::{AtomicU32, Ordering},
    },
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};
use kube::config::{KubeConfigOptions, Kubeconfig};
use tart_kubelet::kube_client::{self, Origin};

mod process;
pub mod testing;
mod wait;

use process::run_script;
pub use process::{live_pids, processes_mentioning, processes_of_run};
pub use wait::{WaitTimeout, unique, wait_for};

/// Deadline for `start.sh` (it has its own 90 s deadline; this one catches a hung script).
const START_DEADLINE: Duration = Duration::from_secs(150);
/// Deadline for `build.sh`: a cold build takes 5-12 min on the project's 2-core machines.
const BUILD_DEADLINE: Duration = Duration::from_secs(40 * 60);
/// Deadline for stopping or starting one component with `component.sh`.
const COMPONENT_DEADLINE: Duration = Duration::from_secs(90);

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

    /// Like [`ControlPlane::start_private`], with extra `start.sh` options (e.g.
    /// `--signing-duration 7m`).
    ///
    /// # Errors
    /// As for [`ControlPlane::start_private`].
    pub fn start_private_with(label: &str, start_args: &[&str]) -> anyhow::Result<ControlPlane> {
        Self::start_with_args(new_run_dir(label)?, true, std::process::id(), start_args)
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
        Self::start_with_args(run_dir, owned, owner_pid, &[])
    }

    fn start_with_args(
        run_dir: PathBuf,
        owned: bool,
        owner_pid: u32,
        start_args: &[&str],
    ) -> anyhow::Result<ControlPlane> {
        let t0 = Instant::now();
        let pid = owner_pid.to_string();
        let mut args = vec!["--run", path_str(&run_dir)?, "--owner-pid", &pid];
        args.extend_from_slice(start_args);
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

    /// Agent flags serving the kubelet API on `127.0.0.1:<port>` with this control plane's
    /// CA-signed serving certificate (`pki/kubelet-serving.*`) and its CA for client
    /// certificates, as the API server's kubelet client expects.
    pub fn kubelet_api_args(&self, port: u16) -> Vec<String> {
        let pki = |f: &str| self.run_dir.join("pki").join(f).display().to_string();
        vec![
            "--kubelet-address".into(),
            "127.0.0.1".into(),
            "--kubelet-port".into(),
            port.to_string(),
            "--tls-cert-file".into(),
            pki("kubelet-serving.crt"),
            "--tls-private-key-file".into(),
            pki("kubelet-serving.key"),
            "--client-ca-file".into(),
            pki("ca.crt"),
        ]
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

    /// The niceness `component` runs at (`start.sh --nice`), read from `/proc/<pid>/stat`;
    /// `None` if it is not running or the file cannot be read.
    pub fn nice_of(&self, component: &str) -> Option<i32> {
        let stat =
            std::fs::read_to_string(format!("/proc/{}/stat", self.pid_of(component)?)).ok()?;
        crate::proc_stat::number(&stat, 19)
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
    let origin = Origin::of(kubeconfig, &kc);
    let config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .unwrap_or_else(|e| panic!("kubeconfig {}: {e}", kubeconfig.display()));
    kube_client::client(&config, origin)
        .unwrap_or_else(|e| panic!("kube client from {}: {e}", kubeconfig.display()))
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

#[cfg(test)]
mod tests;
