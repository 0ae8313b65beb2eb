//! Command line, environment and TOML file -> one validated [`Config`].
//!
//! Precedence, highest first: command-line flag, `TART_KUBELET_*` environment variable, the
//! TOML file given by `--config`, built-in default. [`RunArgs`] is both the clap argument
//! group and the file schema (every field optional, unknown keys rejected), so a setting has
//! the same name everywhere (`--vm-slots`, `TART_KUBELET_VM_SLOTS`, `vm_slots = 2`).
//! Validation ([`Config::resolve`]) is pure and unit-tested; reading the file and the host name
//! are the only I/O here ([`Config::load`]).

mod args;
pub mod units;

use std::{
    collections::{BTreeMap, HashMap},
    net::SocketAddr,
    path::{Path, PathBuf},
    time::Duration,
};

pub use args::{Cli, Command, RunArgs};
use units::{DiskThreshold, TaintSpec};

/// Our label / resource prefix. Only labels under it are ever pruned from the Node.
pub const LABEL_PREFIX: &str = "tart.run/";
/// The extended resource advertising VM slots.
pub const VM_SLOTS_RESOURCE: &str = "tart.run/vm-slots";
/// Default taint.
pub const DEFAULT_TAINT: &str = "virtual-kubelet.io/provider=tart:NoSchedule";

/// Log output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// One JSON object per line.
    Json,
    /// Human-readable text.
    Text,
}

/// How the Pod side obtains registry credentials for `tart pull`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PullCredentials {
    /// Read the Pod's `imagePullSecrets` (needs `get secrets`), pass them via `TART_REGISTRY_*`.
    PodSecrets,
    /// Never read secrets; tart uses the host's own credential store.
    Host,
}

/// Fully validated agent configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Explicit kubeconfig; `None` = infer (`KUBECONFIG`, `~/.kube/config`, in-cluster).
    pub kubeconfig: Option<PathBuf>,
    /// Node name (RFC 1123 subdomain).
    pub node_name: String,
    /// The `tart` program (name on `PATH` or a path).
    pub tart_program: PathBuf,
    /// `TART_HOME` passed to every tart process.
    pub tart_home: PathBuf,
    /// Per-VM `tart run` log files go here.
    pub vm_log_dir: PathBuf,
    /// Append the agent's own log here as well as stderr (`None` = stderr only).
    pub log_file: Option<PathBuf>,
    /// Log format.
    pub log_format: LogFormat,
    /// `tracing` filter directive.
    pub log_filter: String,
    /// Address of `/metrics`, `/healthz`, `/readyz`.
    pub admin_addr: SocketAddr,
    /// Operator labels (validated; `kubernetes.io`/`k8s.io` namespaces refused).
    pub node_labels: BTreeMap<String, String>,
    /// Taint set when the Node is created; `None` = no taint.
    pub taint: Option<TaintSpec>,
    /// Number of VMs this host runs at once.
    pub vm_slots: u32,
    /// The `pods` capacity (Pods beyond the slots wait on the node).
    pub max_pods: u32,
    /// Memory kept for the host: allocatable = capacity - reserve.
    pub memory_reserve_bytes: u64,
    /// Operator override of the cpu capacity.
    pub cpu_override: Option<u32>,
    /// Operator override of the memory capacity.
    pub memory_override_bytes: Option<u64>,
    /// Operator override of the ephemeral-storage capacity.
    pub storage_override_bytes: Option<u64>,
    /// `DiskPressure` when free space on the `TART_HOME` volume falls under this.
    pub disk_pressure: DiskThreshold,
    /// `MemoryPressure` when available memory falls under this.
    pub memory_pressure_bytes: u64,
    /// Lease duration (`leaseDurationSeconds`).
    pub lease_duration: Duration,
    /// Lease renew interval.
    pub lease_renew_interval: Duration,
    /// How often host facts and tart health are re-checked (a change is written at once).
    pub node_status_check_interval: Duration,
    /// Heartbeat write of the Node status when nothing changed.
    pub node_status_report_interval: Duration,
    /// Deadline of each Kubernetes API request made by the node side.
    pub api_timeout: Duration,
    /// Oldest tart version accepted as `(major, minor, patch)`.
    pub min_tart_version: (u32, u32, u32),
    /// Pod side: per-operation tart deadline overrides (keys are `tart::Op::as_str`).
    pub tart_deadlines: HashMap<tart::Op, Duration>,
    /// Pod side: attempts per tart operation (kill-and-retry inside the tart crate).
    pub tart_attempts: u32,
    /// Pod side: a pull without progress for this long is killed and retried.
    pub pull_stall_window: Duration,
    /// Pod side: a `tart run` exit within this window is a start failure.
    pub run_start_window: Duration,
    /// Pod side: how long to wait for the VM's IP.
    pub ip_wait: Duration,
    /// Pod side: grace when a Pod does not set `terminationGracePeriodSeconds`.
    pub default_termination_grace: Duration,
    /// Pod side: registry credentials source.
    pub pull_credentials: PullCredentials,
    /// Pod side: prefix of every VM name the agent creates (adoption/GC touch only these).
    pub vm_name_prefix: String,
    /// Pod side: number of Pods reconciled concurrently.
    pub pod_concurrency: u16,
}

/// A configuration problem, with a message that names the setting.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A setting has an unusable value.
    #[error("invalid {setting}: {message}")]
    Invalid {
        /// The setting's flag name.
        setting: &'static str,
        /// What is wrong.
        message: String,
    },
    /// The `--config` file could not be read.
    #[error("cannot read config file {path}")]
    ReadFile {
        /// The file.
        path: PathBuf,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// The `--config` file is not valid TOML for [`RunArgs`].
    #[error("config file {path} is invalid")]
    ParseFile {
        /// The file.
        path: PathBuf,
        /// Cause.
        #[source]
        source: toml::de::Error,
    },
}

fn invalid(setting: &'static str, message: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        setting,
        message: message.into(),
    }
}

/// Host-derived defaults, passed in so [`Config::resolve`] stays pure.
#[derive(Debug, Clone)]
pub struct HostDefaults {
    /// Lowercased host name (default node name).
    pub hostname: String,
    /// `$HOME`.
    pub home: PathBuf,
}

impl HostDefaults {
    /// Read the host name and `$HOME`.
    pub fn detect() -> Self {
        let hostname = nix::unistd::gethostname()
            .ok()
            .and_then(|h| h.into_string().ok())
            .unwrap_or_else(|| "localhost".into());
        // A Mac's host name is often `Name.local`; a Node name must be lowercase.
        let hostname = hostname.trim_end_matches(".local").to_ascii_lowercase();
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/var/root"));
        Self { hostname, home }
    }
}

impl Config {
    /// Merge `args` over the `--config` file (if any) and validate.
    ///
    /// # Errors
    /// [`ConfigError`] naming the first bad setting or the unreadable file.
    pub fn load(args: RunArgs, host: &HostDefaults) -> Result<Self, ConfigError> {
        let merged = match args.config.clone() {
            Some(path) => args.or(read_file(&path)?),
            None => args,
        };
        Self::resolve(merged, host)
    }

    /// Validate merged settings. Pure.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] naming the setting.
    pub fn resolve(a: RunArgs, host: &HostDefaults) -> Result<Self, ConfigError> {
        use units::{parse_bytes, parse_disk_threshold, parse_duration};
        let dur = |setting: &'static str, v: Option<String>, default: &str| {
            parse_duration(v.as_deref().unwrap_or(default)).map_err(|m| invalid(setting, m))
        };
        let bytes = |setting: &'static str, v: Option<String>| {
            v.map(|s| parse_bytes(&s).map_err(|m| invalid(setting, m)))
                .transpose()
        };

        let node_name = a.node_name.unwrap_or_else(|| host.hostname.clone());
        if !units::is_dns_subdomain(&node_name) {
            return Err(invalid(
                "--node-name",
                format!("{node_name:?} is not a lowercase RFC 1123 name (a-z, 0-9, '-', '.')"),
            ));
        }
        let tart_home = a.tart_home.unwrap_or_else(|| host.home.join(".tart"));
        let vm_log_dir = a
            .vm_log_dir
            .unwrap_or_else(|| host.home.join(".tart-kubelet").join("vm-logs"));
        let log_format = match a.log_format.as_deref().unwrap_or("text") {
            "json" => LogFormat::Json,
            "text" => LogFormat::Text,
            other => {
                return Err(invalid(
                    "--log-format",
                    format!("{other:?}: use json or text"),
                ));
            }
        };
        let admin = a.admin_addr.as_deref().unwrap_or("127.0.0.1:10255");
        let admin_addr: SocketAddr = admin
            .parse()
            .map_err(|_| invalid("--admin-addr", format!("{admin:?} is not host:port")))?;

        let mut node_labels = BTreeMap::new();
        for l in a.node_labels.unwrap_or_default() {
            let (k, v) = units::parse_label(&l).map_err(|m| invalid("--node-label", m))?;
            if reserved_label_key(&k) {
                return Err(invalid(
                    "--node-label",
                    format!("{k:?} is in a kubernetes.io/k8s.io namespace the agent sets itself"),
                ));
            }
            node_labels.insert(k, v);
        }
        let taint = match a.taint.as_deref().unwrap_or(DEFAULT_TAINT) {
            "" | "none" => None,
            t => Some(units::parse_taint(t).map_err(|m| invalid("--taint", m))?),
        };
        let vm_slots = a.vm_slots.unwrap_or(2);
        if !(1..=64).contains(&vm_slots) {
            return Err(invalid(
                "--vm-slots",
                format!("{vm_slots} is not in 1..=64"),
            ));
        }
        let max_pods = a.max_pods.unwrap_or(10);
        if max_pods < vm_slots {
            return Err(invalid(
                "--max-pods",
                format!("{max_pods} is less than --vm-slots {vm_slots}"),
            ));
        }
        let cpu_override = a.cpu;
        if cpu_override == Some(0) {
            return Err(invalid("--cpu", "must be at least 1"));
        }
        let disk_pressure = parse_disk_threshold(a.disk_pressure_free.as_deref().unwrap_or("10%"))
            .map_err(|m| invalid("--disk-pressure-free", m))?;

        let lease_duration = dur("--lease-duration", a.lease_duration, "40s")?;
        let lease_renew_interval = dur("--lease-renew-interval", a.lease_renew_interval, "10s")?;
        if lease_duration < Duration::from_secs(1) {
            return Err(invalid("--lease-duration", "must be at least 1s"));
        }
        if lease_renew_interval.is_zero() || lease_renew_interval * 2 > lease_duration {
            return Err(invalid(
                "--lease-renew-interval",
                "must be positive and at most half of --lease-duration",
            ));
        }
        let node_status_check_interval = dur(
            "--node-status-check-interval",
            a.node_status_check_interval,
            "10s",
        )?;
        let node_status_report_interval = dur(
            "--node-status-report-interval",
            a.node_status_report_interval,
            "5m",
        )?;
        if node_status_check_interval.is_zero() {
            return Err(invalid("--node-status-check-interval", "must be positive"));
        }
        if node_status_report_interval < node_status_check_interval {
            return Err(invalid(
                "--node-status-report-interval",
                "must be at least --node-status-check-interval",
            ));
        }
        let api_timeout = dur("--api-timeout", a.api_timeout, "10s")?;
        if api_timeout.is_zero() || api_timeout >= lease_duration {
            return Err(invalid(
                "--api-timeout",
                "must be positive and shorter than --lease-duration",
            ));
        }
        let min_tart_version = parse_semver(a.min_tart_version.as_deref().unwrap_or("2.20.0"))
            .ok_or_else(|| invalid("--min-tart-version", "use MAJOR.MINOR.PATCH"))?;

        let mut tart_deadlines = HashMap::new();
        for d in a.tart_deadlines.unwrap_or_default() {
            let (op, v) = d
                .split_once('=')
                .ok_or_else(|| invalid("--tart-deadline", format!("{d:?} is not op=duration")))?;
            let op = tart::Op::ALL
                .into_iter()
                .find(|o| o.as_str() == op)
                .ok_or_else(|| invalid("--tart-deadline", format!("{op:?} is not a tart op")))?;
            let v = parse_duration(v).map_err(|m| invalid("--tart-deadline", m))?;
            tart_deadlines.insert(op, v);
        }
        let tart_attempts = a.tart_attempts.unwrap_or(3);
        if !(1..=10).contains(&tart_attempts) {
            return Err(invalid("--tart-attempts", "must be in 1..=10"));
        }
        let pull_credentials = match a.pull_credentials.as_deref().unwrap_or("pod-secrets") {
            "pod-secrets" => PullCredentials::PodSecrets,
            "host" => PullCredentials::Host,
            o => {
                return Err(invalid(
                    "--pull-credentials",
                    format!("{o:?}: use pod-secrets or host"),
                ));
            }
        };
        let vm_name_prefix = a.vm_name_prefix.unwrap_or_else(|| "tkl-".into());
        // The prefix plus a 36-character UID must still be a valid VM name.
        if vm_name_prefix.is_empty()
            || vm_name_prefix.len() > 16
            || tart::VmName::new(format!("{vm_name_prefix}x")).is_err()
        {
            return Err(invalid(
                "--vm-name-prefix",
                "must be 1-16 characters [A-Za-z0-9._-], not starting with '-' or '.'",
            ));
        }
        let pod_concurrency = a.pod_concurrency.unwrap_or(8);
        if pod_concurrency == 0 {
            return Err(invalid("--pod-concurrency", "must be at least 1"));
        }

        Ok(Config {
            kubeconfig: a.kubeconfig,
            node_name,
            tart_program: a.tart_program.unwrap_or_else(|| PathBuf::from("tart")),
            tart_home,
            vm_log_dir,
            log_file: a.log_file,
            log_format,
            log_filter: a.log_filter.unwrap_or_else(|| "info,kube=warn".into()),
            admin_addr,
            node_labels,
            taint,
            vm_slots,
            max_pods,
            memory_reserve_bytes: bytes("--memory-reserve", a.memory_reserve)?.unwrap_or(4 << 30),
            cpu_override,
            memory_override_bytes: bytes("--memory", a.memory)?,
            storage_override_bytes: bytes("--ephemeral-storage", a.ephemeral_storage)?,
            disk_pressure,
            memory_pressure_bytes: bytes(
                "--memory-pressure-available",
                a.memory_pressure_available,
            )?
            .unwrap_or(512 << 20),
            lease_duration,
            lease_renew_interval,
            node_status_check_interval,
            node_status_report_interval,
            api_timeout,
            min_tart_version,
            tart_deadlines,
            tart_attempts,
            pull_stall_window: dur("--pull-stall-window", a.pull_stall_window, "10m")?,
            run_start_window: dur("--run-start-window", a.run_start_window, "5s")?,
            ip_wait: dur("--ip-wait", a.ip_wait, "3m")?,
            default_termination_grace: dur(
                "--default-termination-grace",
                a.default_termination_grace,
                "30s",
            )?,
            pull_credentials,
            vm_name_prefix,
            pod_concurrency,
        })
    }
}

/// Label keys in namespaces the agent (or NodeRestriction) controls.
fn reserved_label_key(k: &str) -> bool {
    let prefix = k.rsplit_once('/').map(|(p, _)| p).unwrap_or("");
    ["kubernetes.io", "k8s.io"]
        .iter()
        .any(|d| prefix == *d || prefix.ends_with(&format!(".{d}")))
}

/// `2.35.0` -> `(2, 35, 0)`.
pub fn parse_semver(s: &str) -> Option<(u32, u32, u32)> {
    let mut it = s.trim().split('.').map(|p| p.parse::<u32>().ok());
    let v = (it.next()??, it.next()??, it.next()??);
    it.next().is_none().then_some(v)
}

fn read_file(path: &Path) -> Result<RunArgs, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::ReadFile {
        path: path.to_owned(),
        source,
    })?;
    toml::from_str(&text).map_err(|source| ConfigError::ParseFile {
        path: path.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests;
