//! What the configuration is: the validated [`Config`], its closed choices, the errors that
//! name a bad setting, and the host-derived defaults.

use crate::vm_name::VmNaming;
use std::{
    collections::{BTreeMap, HashMap},
    net::{IpAddr, SocketAddr},
    path::PathBuf,
    time::Duration,
};

use super::Limits;
use super::profiles::VmProfiles;
use super::units::{DiskThreshold, TaintSpec};

/// Our label / resource prefix. Only labels under it are ever pruned from the Node.
pub(crate) const LABEL_PREFIX: &str = "tart.run/";
/// The extended resource advertising VM slots.
pub(crate) const VM_SLOTS_RESOURCE: &str = "tart.run/vm-slots";

/// How the agent writes its own log lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum LogFormat {
    /// One JSON object per line.
    Json,
    /// Human-readable text.
    #[default]
    Text,
}

/// How the Pod side obtains registry credentials for `tart pull`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum PullCredentials {
    /// Read the Pod's `imagePullSecrets` (needs `get secrets`), pass them via `TART_REGISTRY_*`.
    #[default]
    PodSecrets,
    /// Never read secrets; tart uses the host's own credential store.
    Host,
}

/// Where a Pod's guest launcher comes from (docs/guest.md, "Which image do I need").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum LauncherMode {
    /// The image's own launcher if it has one, else the shipped one through the Tart Guest
    /// Agent.
    #[default]
    Auto,
    /// The image's own launcher only; the guest agent is never used.
    Baked,
    /// Always install the shipped launcher through the Tart Guest Agent.
    Deliver,
}

impl LauncherMode {
    /// Every mode, in the order error messages list them.
    pub(crate) const ALL: [LauncherMode; 3] = [Self::Auto, Self::Baked, Self::Deliver];

    /// The word a flag, the configuration file and the Pod annotation use.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Baked => "baked",
            Self::Deliver => "deliver",
        }
    }

    /// The mode `word` names.
    pub(crate) fn parse(word: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.as_str() == word)
    }
}

/// Whose credentials the agent runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Identity {
    /// Its own identity with the agent's ClusterRole; a finalizer holds each Pod until its VM
    /// is gone.
    #[default]
    Agent,
    /// `system:node:<node>` in `system:nodes`: the Node authorizer lets it read only its own
    /// Pods' Secrets and ConfigMaps, NodeRestriction forbids Pod metadata writes, so no
    /// finalizer; graceful deletion holds the Pod until the agent deletes it with grace 0.
    Node,
}

impl Identity {
    /// Whether the agent puts its finalizer on Pods.
    pub fn uses_finalizer(self) -> bool {
        self == Self::Agent
    }
}

/// Fully validated agent configuration.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Config {
    /// Explicit kubeconfig; `None` = infer (`KUBECONFIG`, `~/.kube/config`, in-cluster).
    pub kubeconfig: Option<PathBuf>,
    /// The bootstrap kubeconfig of the TLS bootstrap (`--identity node` only; then
    /// `kubeconfig` is set: it is where the issued credentials are written).
    pub bootstrap_kubeconfig: Option<PathBuf>,
    /// Node name (RFC 1123 subdomain).
    pub node_name: String,
    /// The `tart` program (name on `PATH` or a path).
    pub tart_program: PathBuf,
    /// `TART_HOME` passed to every tart process.
    pub tart_home: PathBuf,
    /// Per-VM `tart run` log files go here.
    pub vm_log_dir: PathBuf,
    /// One directory per VM with the files shared into its guest.
    pub guest_dir: PathBuf,
    /// The Pods' container logs.
    pub pod_log_dir: PathBuf,
    /// Append the agent's own log here as well as stderr (`None` = stderr only).
    pub log_file: Option<PathBuf>,
    /// Format of the agent's own log lines (not the VMs' logs).
    pub log_format: LogFormat,
    /// `tracing` filter directive.
    pub log_filter: String,
    /// Address of `/metrics`, `/healthz`, `/readyz`.
    pub admin_addr: SocketAddr,
    /// Port of the kubelet API, advertised in the Node's `daemonEndpoints`.
    pub kubelet_port: u16,
    /// Listen address of the kubelet API.
    pub kubelet_address: IpAddr,
    /// The Node's published `InternalIP` (`None` = the local address towards the API server).
    pub node_ip: Option<IpAddr>,
    /// Serving certificate of the kubelet API (`None` = requested through the CSR API).
    pub tls_cert_file: Option<PathBuf>,
    /// Its private key (given together with the certificate).
    pub tls_private_key_file: Option<PathBuf>,
    /// CA of kubelet API client certificates (`None` = the kubeconfig's CA, see
    /// [`super::client_ca`]).
    pub client_ca_file: Option<PathBuf>,
    /// Serving key and certificate obtained through the CSR API.
    pub cert_dir: PathBuf,
    /// The kubelet port's deadlines and caps (`--kubelet-api-*`,
    /// `--streaming-connection-idle-timeout`).
    pub kubelet_api_limits: Limits,
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
    /// How often the node Lease is renewed.
    pub lease_renew_interval: Duration,
    /// How often host facts and tart health are re-checked (a change is written at once).
    pub node_status_check_interval: Duration,
    /// How often the host checks run.
    pub host_check_interval: Duration,
    /// Stand-in file for the host-check facts (else the macOS commands).
    pub host_checks_file: Option<PathBuf>,
    /// The softnet program to check, if any.
    pub softnet_program: Option<PathBuf>,
    /// Pod side: the VM profiles by RuntimeClass handler, and the default one.
    pub vm_profiles: VmProfiles,
    /// Host faults within `quarantine_window` that quarantine the Node.
    pub quarantine_faults: u32,
    /// The window quarantine faults are counted in.
    pub quarantine_window: Duration,
    /// How long a quarantine lasts after its last fault.
    pub quarantine_cooldown: Duration,
    /// Heartbeat write of the Node status when nothing changed.
    pub node_status_report_interval: Duration,
    /// Deadline of each Kubernetes API request made by the node side.
    pub api_timeout: Duration,
    /// Oldest tart version accepted as `(major, minor, patch)`.
    pub min_tart_version: (u32, u32, u32),
    /// Pod side: per-operation tart deadline overrides; other operations keep the tart crate's.
    pub tart_deadlines: HashMap<tart::Op, Duration>,
    /// Pod side: attempts per tart operation (kill-and-retry inside the tart crate).
    pub tart_attempts: u32,
    /// Pod side: a pull without progress for this long is killed and retried.
    pub pull_stall_window: Duration,
    /// Pod side: a `tart run` exit within this window is a start failure.
    pub run_start_window: Duration,
    /// Pod side: how long to wait for the VM's IP.
    pub ip_wait: Duration,
    /// Pod side: where a Pod's guest launcher comes from, unless the Pod says otherwise.
    pub guest_launcher: LauncherMode,
    /// Pod side: how long a guest has, once it has an IP, to report through its status share
    /// before the start attempt ends with `GuestLauncherMissing`.
    pub guest_launcher_timeout: Duration,
    /// Pod side: grace when a Pod does not set `terminationGracePeriodSeconds`.
    pub default_termination_grace: Duration,
    /// Pod side: registry credentials source.
    pub pull_credentials: PullCredentials,
    /// Pod side: VM names from `--vm-name-prefix`, built once when the prefix is checked; its
    /// prefix starts every VM name the agent creates (adoption/GC touch only these).
    pub vm_naming: VmNaming,
    /// Pod side: number of Pods reconciled concurrently.
    pub pod_concurrency: u16,
    /// Whose credentials the agent runs with.
    pub identity: Identity,
    /// Pod side: longest time between service-account token refreshes.
    pub token_refresh_max: Duration,
    /// Images: volume use (percent) at which cached images are evicted.
    pub image_gc_high_threshold: u8,
    /// Images: volume use (percent) eviction frees down to.
    pub image_gc_low_threshold: u8,
    /// Images: most bytes the cache and goldens may take.
    pub image_cache_budget: Option<u64>,
    /// Images: time between budget passes.
    pub image_gc_period: Duration,
    /// Images: namespace of the pre-pull declaration.
    pub prepull_namespace: String,
    /// Images: the pre-pull declaration ConfigMap's name.
    pub prepull_name: String,
    /// Images: time between reads of the declaration.
    pub prepull_period: Duration,
    /// How often vitals are sampled; zero = off.
    pub vitals_interval: Duration,
    /// Linux: the file overriding the host's memory readings.
    pub vitals_host_file: Option<PathBuf>,
}

/// A configuration problem, with a message that names the setting.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConfigError {
    /// A setting has an unusable value.
    #[error("invalid {setting}: {message}")]
    Invalid {
        /// The setting's flag name, e.g. `--vm-slots`.
        setting: &'static str,
        /// What is wrong.
        message: String,
    },
    /// A `[vm_profiles.<profile>]` table has an unusable value.
    #[error("invalid VM profile {profile}: {field}: {message}")]
    Profile {
        /// The profile's name (its RuntimeClass handler).
        profile: String,
        /// The key in its table, or `name` for the name itself.
        field: &'static str,
        /// What is wrong.
        message: String,
    },
    /// The `--config` file could not be read.
    #[error("cannot read config file {path}")]
    ReadFile {
        /// The path given with `--config`.
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The `--config` file is not TOML of [`RunArgs`]' keys, or holds an unusable value (the
    /// source names the key and the line).
    #[error("config file {path} is invalid")]
    ParseFile {
        /// The path given with `--config`.
        path: PathBuf,
        #[source]
        source: toml::de::Error,
    },
}

/// Host-derived defaults, passed in so [`Config::resolve`] stays pure.
#[derive(Debug, Clone)]
pub(crate) struct HostDefaults {
    /// Lowercased host name (default node name).
    pub hostname: String,
    /// `$HOME`.
    pub home: PathBuf,
}

impl HostDefaults {
    /// Read the host name and `$HOME`.
    pub(crate) fn detect() -> Self {
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
