//! The agent's options. [`RunArgs`] is the clap argument group of `run` and doubles as the TOML file schema: every field is
//! optional so that "not given" can fall through to the file and then to the default, which
//! is why the defaults are filled in when the configuration is resolved rather than in clap (a clap default would
//! hide the file's value). Values are typed as they are parsed, by the parsers in
//! [`super::values`] and [`super::units`] for both flags and file.

use std::{
    collections::BTreeMap,
    net::{IpAddr, SocketAddr},
    path::PathBuf,
    time::Duration,
};

use serde::Deserialize;

use super::{
    Identity, LauncherMode, LogFormat, PullCredentials,
    profiles::ProfileArgs,
    units::{DiskThreshold, parse_bytes, parse_disk_threshold, parse_duration},
    values::{NodeLabel, NodeTaint, TartDeadline, de, parse_socket_addr, parse_version},
};

/// Options of `run`; also the schema of the `--config` TOML file.
#[derive(clap::Args, Deserialize, Debug, Clone, Default, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct RunArgs {
    /// TOML file with any of these options (flags and environment override it).
    #[arg(long, env = "TART_KUBELET_CONFIG", value_name = "PATH")]
    #[serde(skip)]
    pub(crate) config: Option<PathBuf>,

    /// Kubeconfig of the agent's identity. Default: $KUBECONFIG, ~/.kube/config, or the
    /// in-cluster service account.
    #[arg(long, env = "TART_KUBELET_KUBECONFIG", value_name = "PATH")]
    pub(crate) kubeconfig: Option<PathBuf>,
    /// With `--identity node`: a kubeconfig holding a bootstrap token (kubelet's TLS
    /// bootstrap). When the --kubeconfig file is missing or its client certificate is not
    /// valid, the agent requests a client certificate with it through the CSR API and writes
    /// --kubeconfig; the certificate is renewed at 70-90% of its life. Default: none.
    #[arg(long, env = "TART_KUBELET_BOOTSTRAP_KUBECONFIG", value_name = "PATH")]
    pub(crate) bootstrap_kubeconfig: Option<PathBuf>,
    /// Name of the Node to register. Default: the host name, lowercased, without `.local`.
    #[arg(long, env = "TART_KUBELET_NODE_NAME", value_name = "NAME")]
    pub(crate) node_name: Option<String>,
    /// The tart program: a name looked up on PATH, or a path. Default: tart.
    #[arg(long, env = "TART_KUBELET_TART_PROGRAM", value_name = "PATH")]
    pub(crate) tart_program: Option<PathBuf>,
    /// TART_HOME for every tart command; its volume backs ephemeral-storage and DiskPressure.
    /// Default: ~/.tart.
    #[arg(long, env = "TART_KUBELET_TART_HOME", value_name = "DIR")]
    pub(crate) tart_home: Option<PathBuf>,
    /// Directory for one `tart run` log file per VM. Default: ~/.tart-kubelet/vm-logs.
    #[arg(long, env = "TART_KUBELET_VM_LOG_DIR", value_name = "DIR")]
    pub(crate) vm_log_dir: Option<PathBuf>,
    /// Directory holding one directory per VM with the files shared into its guest (control,
    /// status, volumes). Default: ~/.tart-kubelet/guest.
    #[arg(long, env = "TART_KUBELET_GUEST_DIR", value_name = "DIR")]
    pub(crate) guest_dir: Option<PathBuf>,
    /// Directory of the Pods' container logs (kubelet's /var/log/pods layout), kept until a
    /// Pod is deleted. Default: ~/.tart-kubelet/pod-logs.
    #[arg(long, env = "TART_KUBELET_POD_LOG_DIR", value_name = "DIR")]
    pub(crate) pod_log_dir: Option<PathBuf>,
    /// Also append the agent's log to this file. Default: stderr only.
    #[arg(long, env = "TART_KUBELET_LOG_FILE", value_name = "PATH")]
    pub(crate) log_file: Option<PathBuf>,
    /// Log format: json or text. Default: text.
    #[arg(
        long,
        env = "TART_KUBELET_LOG_FORMAT",
        value_name = "FORMAT",
        hide_possible_values = true
    )]
    pub(crate) log_format: Option<LogFormat>,
    /// Log filter (tracing EnvFilter syntax). Default: info,kube=warn.
    #[arg(long, env = "TART_KUBELET_LOG_FILTER", value_name = "FILTER")]
    pub(crate) log_filter: Option<String>,
    /// Listen address of /metrics, /healthz and /readyz. Default: 127.0.0.1:10255.
    #[arg(
        long,
        env = "TART_KUBELET_ADMIN_ADDR",
        value_name = "HOST:PORT",
        value_parser = parse_socket_addr
    )]
    #[serde(default, deserialize_with = "de::socket_addr")]
    pub(crate) admin_addr: Option<SocketAddr>,
    /// Port of the kubelet API (HTTPS: `kubectl logs`, the node proxy); the Node advertises
    /// it. Default: 10250.
    #[arg(long, env = "TART_KUBELET_KUBELET_PORT", value_name = "PORT")]
    pub(crate) kubelet_port: Option<u16>,
    /// Address the kubelet API listens on. Default: 0.0.0.0.
    #[arg(long, env = "TART_KUBELET_KUBELET_ADDRESS", value_name = "IP")]
    pub(crate) kubelet_address: Option<IpAddr>,
    /// The address the Node publishes as its InternalIP: the API server dials the kubelet API
    /// there, and a serving certificate from the CSR API names it. Set it when the API server
    /// reaches this Mac at another address than the one the Mac uses towards it (NAT, an
    /// overlay). Default: the local address of the route to the API server.
    #[arg(long, env = "TART_KUBELET_NODE_IP", value_name = "IP")]
    pub(crate) node_ip: Option<IpAddr>,
    /// PEM serving certificate of the kubelet API (reloaded when the file changes). Without
    /// it and --tls-private-key-file the certificate is requested through the CSR API
    /// (signer kubernetes.io/kubelet-serving) and the API is served once it is issued.
    #[arg(long, env = "TART_KUBELET_TLS_CERT_FILE", value_name = "PATH")]
    pub(crate) tls_cert_file: Option<PathBuf>,
    /// PEM private key of the serving certificate.
    #[arg(long, env = "TART_KUBELET_TLS_PRIVATE_KEY_FILE", value_name = "PATH")]
    pub(crate) tls_private_key_file: Option<PathBuf>,
    /// PEM CA bundle that signs client certificates of kubelet API callers (the API server's
    /// kubelet client certificate). Default: the cluster CA the kubeconfig names; with
    /// neither, only bearer tokens authenticate.
    #[arg(long, env = "TART_KUBELET_CLIENT_CA_FILE", value_name = "PATH")]
    pub(crate) client_ca_file: Option<PathBuf>,
    /// Directory (0700) of the keys and certificates requested through the CSR API: the
    /// kubelet API's serving pair (no --tls-cert-file) and the client pair of the TLS
    /// bootstrap (--bootstrap-kubeconfig). Default: ~/.tart-kubelet/pki.
    #[arg(long, env = "TART_KUBELET_CERT_DIR", value_name = "DIR")]
    pub(crate) cert_dir: Option<PathBuf>,
    /// Deadline of a kubelet API connection's TLS handshake. Default: 10s.
    #[arg(
        long,
        env = "TART_KUBELET_KUBELET_API_HANDSHAKE_TIMEOUT",
        value_name = "DURATION",
        value_parser = parse_duration
    )]
    #[serde(default, deserialize_with = "de::duration")]
    pub(crate) kubelet_api_handshake_timeout: Option<Duration>,
    /// Deadline of each kubelet API request's headers, from the handshake or the previous
    /// response (so also how long an idle kept-alive connection stays open). Default: 30s.
    #[arg(
        long,
        env = "TART_KUBELET_KUBELET_API_HEADER_TIMEOUT",
        value_name = "DURATION",
        value_parser = parse_duration
    )]
    #[serde(default, deserialize_with = "de::duration")]
    pub(crate) kubelet_api_header_timeout: Option<Duration>,
    /// Kubelet API connections open at once; at the cap a new one closes the oldest
    /// unauthenticated one, or is refused when all are authenticated. Default: 96.
    #[arg(
        long,
        env = "TART_KUBELET_KUBELET_API_MAX_CONNECTIONS",
        value_name = "N"
    )]
    pub(crate) kubelet_api_max_connections: Option<usize>,
    /// exec, attach and port-forward sessions at once; more get 429. Default: 16.
    #[arg(long, env = "TART_KUBELET_KUBELET_API_MAX_STREAMS", value_name = "N")]
    pub(crate) kubelet_api_max_streams: Option<usize>,
    /// Followed container logs (`kubectl logs -f`) at once; more get 429. Default: 32.
    #[arg(
        long,
        env = "TART_KUBELET_KUBELET_API_MAX_LOG_FOLLOWS",
        value_name = "N"
    )]
    pub(crate) kubelet_api_max_log_follows: Option<usize>,
    /// An exec, attach or port-forward connection with nothing moving either way for this
    /// long is closed (kubelet's flag). Default: 4h.
    #[arg(
        long,
        env = "TART_KUBELET_STREAMING_CONNECTION_IDLE_TIMEOUT",
        value_name = "DURATION",
        value_parser = parse_duration
    )]
    #[serde(default, deserialize_with = "de::duration")]
    pub(crate) streaming_connection_idle_timeout: Option<Duration>,
    /// Extra Node label key=value (repeatable; comma-separated in the environment). Keys in
    /// the kubernetes.io and k8s.io namespaces follow kubelet's --node-labels rule (e.g.
    /// topology.kubernetes.io/zone, node.kubernetes.io/instance-type and the
    /// node.kubernetes.io/ and kubelet.kubernetes.io/ prefixes; docs/node.md). Labels under
    /// tart.run/ that are no longer configured are removed from the Node; other labels are
    /// never removed.
    #[arg(
        long = "node-label",
        env = "TART_KUBELET_NODE_LABELS",
        value_name = "KEY=VALUE",
        value_delimiter = ','
    )]
    pub(crate) node_labels: Option<Vec<NodeLabel>>,
    /// Taint set when the Node is created, key=value:Effect; `none` for no taint.
    /// Default: virtual-kubelet.io/provider=tart:NoSchedule.
    #[arg(long, env = "TART_KUBELET_TAINT", value_name = "TAINT")]
    pub(crate) taint: Option<NodeTaint>,
    /// VMs this host runs at once: a Pod takes one of these slots before its `tart run` and
    /// waits Pending while none is free; the Node advertises them as the `tart.run/vm-slots`
    /// extended resource (the `pods` capacity is --max-pods). Default: 2, Apple's limit of two
    /// macOS guests per host.
    #[arg(long, env = "TART_KUBELET_VM_SLOTS", value_name = "N")]
    pub(crate) vm_slots: Option<u32>,
    /// The `pods` capacity: how many Pods the scheduler may bind here. Pods beyond the VM
    /// slots wait Pending on the node (with an event) until a slot frees. Default: the VM slots.
    #[arg(long, env = "TART_KUBELET_MAX_PODS", value_name = "N")]
    pub(crate) max_pods: Option<u32>,
    /// Memory kept for macOS, Tart and the agent: allocatable = capacity - reserve. Default: 4Gi.
    #[arg(
        long,
        env = "TART_KUBELET_MEMORY_RESERVE",
        value_name = "QUANTITY",
        value_parser = parse_bytes
    )]
    #[serde(default, deserialize_with = "de::bytes")]
    pub(crate) memory_reserve: Option<u64>,
    /// Override the cpu capacity (whole cores). Default: the host's logical CPUs.
    #[arg(long, env = "TART_KUBELET_CPU", value_name = "N")]
    pub(crate) cpu: Option<u32>,
    /// Override the memory capacity (e.g. 32Gi). Default: the host's physical memory.
    #[arg(long, env = "TART_KUBELET_MEMORY", value_name = "QUANTITY", value_parser = parse_bytes)]
    #[serde(default, deserialize_with = "de::bytes")]
    pub(crate) memory: Option<u64>,
    /// Override the ephemeral-storage capacity. Default: the size of the TART_HOME volume.
    #[arg(
        long,
        env = "TART_KUBELET_EPHEMERAL_STORAGE",
        value_name = "QUANTITY",
        value_parser = parse_bytes
    )]
    #[serde(default, deserialize_with = "de::bytes")]
    pub(crate) ephemeral_storage: Option<u64>,
    /// DiskPressure when free space on the TART_HOME volume is under this: a percentage of
    /// the volume (10%) or a quantity (60Gi). Default: 10%.
    #[arg(
        long,
        env = "TART_KUBELET_DISK_PRESSURE_FREE",
        value_name = "THRESHOLD",
        value_parser = parse_disk_threshold
    )]
    #[serde(default, deserialize_with = "de::disk_threshold")]
    pub(crate) disk_pressure_free: Option<DiskThreshold>,
    /// MemoryPressure when the host's available memory is under this. Default: 512Mi.
    #[arg(
        long,
        env = "TART_KUBELET_MEMORY_PRESSURE_AVAILABLE",
        value_name = "QUANTITY",
        value_parser = parse_bytes
    )]
    #[serde(default, deserialize_with = "de::bytes")]
    pub(crate) memory_pressure_available: Option<u64>,
    /// Node Lease duration (leaseDurationSeconds). Default: 40s.
    #[arg(
        long,
        env = "TART_KUBELET_LEASE_DURATION",
        value_name = "DURATION",
        value_parser = parse_duration
    )]
    #[serde(default, deserialize_with = "de::duration")]
    pub(crate) lease_duration: Option<Duration>,
    /// Node Lease renew interval, at most half the duration. Default: 10s.
    #[arg(
        long,
        env = "TART_KUBELET_LEASE_RENEW_INTERVAL",
        value_name = "DURATION",
        value_parser = parse_duration
    )]
    #[serde(default, deserialize_with = "de::duration")]
    pub(crate) lease_renew_interval: Option<Duration>,
    /// How often host facts and tart health are re-checked; a change is written at once.
    /// Default: 10s.
    #[arg(
        long,
        env = "TART_KUBELET_NODE_STATUS_CHECK_INTERVAL",
        value_name = "DURATION",
        value_parser = parse_duration
    )]
    #[serde(default, deserialize_with = "de::duration")]
    pub(crate) node_status_check_interval: Option<Duration>,
    /// How often the host checks run (GUI session, login keychain, DHCP lease table, softnet):
    /// a failing one keeps new Pods off the Node until it passes. Default: 10s.
    #[arg(
        long,
        env = "TART_KUBELET_HOST_CHECK_INTERVAL",
        value_name = "DURATION",
        value_parser = parse_duration
    )]
    #[serde(default, deserialize_with = "de::duration")]
    pub(crate) host_check_interval: Option<Duration>,
    /// Read the host-check facts from this file instead of the macOS commands (a stand-in for
    /// tests and for hosts other than macOS; `key=value` lines, see docs/node.md).
    /// Default: the macOS commands on macOS, no host checks elsewhere.
    #[arg(long, env = "TART_KUBELET_HOST_CHECKS_FILE", value_name = "PATH")]
    pub(crate) host_checks_file: Option<PathBuf>,
    /// The softnet program the host checks verify is root-owned and setuid (`softnet` and
    /// `host` VM profiles need it).
    /// Default: `softnet` on `PATH` for those profiles on macOS; otherwise not checked.
    #[arg(long, env = "TART_KUBELET_SOFTNET_PROGRAM", value_name = "PATH")]
    pub(crate) softnet_program: Option<PathBuf>,
    /// Host-caused VM start failures within --quarantine-window that quarantine the Node
    /// (no new Pods for --quarantine-cooldown; running VMs stay). Default: 3.
    #[arg(long, env = "TART_KUBELET_QUARANTINE_FAULTS", value_name = "N")]
    pub(crate) quarantine_faults: Option<u32>,
    /// The window the quarantine's faults are counted in. Default: 10m.
    #[arg(
        long,
        env = "TART_KUBELET_QUARANTINE_WINDOW",
        value_name = "DURATION",
        value_parser = parse_duration
    )]
    #[serde(default, deserialize_with = "de::duration")]
    pub(crate) quarantine_window: Option<Duration>,
    /// How long a quarantine lasts after its last fault (a VM that starts ends it).
    /// Default: 15m.
    #[arg(
        long,
        env = "TART_KUBELET_QUARANTINE_COOLDOWN",
        value_name = "DURATION",
        value_parser = parse_duration
    )]
    #[serde(default, deserialize_with = "de::duration")]
    pub(crate) quarantine_cooldown: Option<Duration>,
    /// Node status heartbeat when nothing changed (the Lease is the liveness signal).
    /// Default: 5m.
    #[arg(
        long,
        env = "TART_KUBELET_NODE_STATUS_REPORT_INTERVAL",
        value_name = "DURATION",
        value_parser = parse_duration
    )]
    #[serde(default, deserialize_with = "de::duration")]
    pub(crate) node_status_report_interval: Option<Duration>,
    /// Deadline of each API request of the node side (Lease, Node). Default: 10s.
    #[arg(
        long,
        env = "TART_KUBELET_API_TIMEOUT",
        value_name = "DURATION",
        value_parser = parse_duration
    )]
    #[serde(default, deserialize_with = "de::duration")]
    pub(crate) api_timeout: Option<Duration>,
    /// Oldest tart version the agent accepts; older makes TartReady False. Default: 2.20.0.
    #[arg(
        long,
        env = "TART_KUBELET_MIN_TART_VERSION",
        value_name = "X.Y.Z",
        value_parser = parse_version
    )]
    #[serde(default, deserialize_with = "de::version")]
    pub(crate) min_tart_version: Option<(u32, u32, u32)>,
    /// Per-operation tart deadline, op=duration (repeatable), e.g. clone=10m. Ops: version,
    /// list, get, pull, clone, set, run, ip, stop, delete, exec, prune. Default: the tart
    /// crate's defaults.
    #[arg(
        long = "tart-deadline",
        env = "TART_KUBELET_TART_DEADLINES",
        value_name = "OP=DURATION",
        value_delimiter = ','
    )]
    pub(crate) tart_deadlines: Option<Vec<TartDeadline>>,
    /// Attempts per tart operation that timed out, stalled or hit a transient error (killed
    /// and retried). Default: 3.
    #[arg(long, env = "TART_KUBELET_TART_ATTEMPTS", value_name = "N")]
    pub(crate) tart_attempts: Option<u32>,
    /// A pull that prints no progress for this long is killed and retried. Default: 10m.
    #[arg(
        long,
        env = "TART_KUBELET_PULL_STALL_WINDOW",
        value_name = "DURATION",
        value_parser = parse_duration
    )]
    #[serde(default, deserialize_with = "de::duration")]
    pub(crate) pull_stall_window: Option<Duration>,
    /// A `tart run` that exits within this window is a start failure. Default: 5s.
    #[arg(
        long,
        env = "TART_KUBELET_RUN_START_WINDOW",
        value_name = "DURATION",
        value_parser = parse_duration
    )]
    #[serde(default, deserialize_with = "de::duration")]
    pub(crate) run_start_window: Option<Duration>,
    /// How long to wait for a started VM's IP address. Default: 3m.
    #[arg(
        long,
        env = "TART_KUBELET_IP_WAIT",
        value_name = "DURATION",
        value_parser = parse_duration
    )]
    #[serde(default, deserialize_with = "de::duration")]
    pub(crate) ip_wait: Option<Duration>,
    /// Where a Pod's guest launcher comes from: auto (the image's own, else the shipped one
    /// installed through the Tart Guest Agent), baked (the image's own only) or deliver
    /// (always the shipped one). A Pod overrides it with the annotation
    /// tart.run/guest-launcher. Default: auto.
    #[arg(
        long,
        env = "TART_KUBELET_GUEST_LAUNCHER",
        value_name = "MODE",
        hide_possible_values = true
    )]
    pub(crate) guest_launcher: Option<LauncherMode>,
    /// How long a started guest has, once it has an IP, to report through its status share
    /// before the start attempt ends with GuestLauncherMissing. Default: 2m.
    #[arg(
        long,
        env = "TART_KUBELET_GUEST_LAUNCHER_TIMEOUT",
        value_name = "DURATION",
        value_parser = parse_duration
    )]
    #[serde(default, deserialize_with = "de::duration")]
    pub(crate) guest_launcher_timeout: Option<Duration>,
    /// Grace period for Pods that do not set terminationGracePeriodSeconds. Default: 30s.
    #[arg(
        long,
        env = "TART_KUBELET_DEFAULT_TERMINATION_GRACE",
        value_name = "DURATION",
        value_parser = parse_duration
    )]
    #[serde(default, deserialize_with = "de::duration")]
    pub(crate) default_termination_grace: Option<Duration>,
    /// Registry credentials for pulls: pod-secrets (read the Pod's imagePullSecrets, pass them
    /// to tart through the environment) or host (tart's own credential store). Default:
    /// pod-secrets.
    #[arg(
        long,
        env = "TART_KUBELET_PULL_CREDENTIALS",
        value_name = "SOURCE",
        hide_possible_values = true
    )]
    pub(crate) pull_credentials: Option<PullCredentials>,
    /// Prefix of every VM name the agent creates; adoption and clean-up only touch VMs with
    /// it. Default: tkl-.
    #[arg(long, env = "TART_KUBELET_VM_NAME_PREFIX", value_name = "PREFIX")]
    pub(crate) vm_name_prefix: Option<String>,
    /// Whose credentials the agent runs with: agent (its own ServiceAccount or user, with a
    /// finalizer on every Pod) or node (`system:node:<name>` in `system:nodes`, under the Node
    /// authorizer and NodeRestriction, without a finalizer, as kubelet). Default: agent.
    #[arg(
        long,
        env = "TART_KUBELET_IDENTITY",
        value_name = "IDENTITY",
        hide_possible_values = true
    )]
    pub(crate) identity: Option<Identity>,
    /// A service-account token is refreshed at 80% of its life, or after this long if that
    /// comes first. Default: 24h.
    #[arg(
        long,
        env = "TART_KUBELET_TOKEN_REFRESH_MAX",
        value_name = "DURATION",
        value_parser = parse_duration
    )]
    #[serde(default, deserialize_with = "de::duration")]
    pub(crate) token_refresh_max: Option<Duration>,
    /// Pods reconciled concurrently. Default: 8.
    #[arg(long, env = "TART_KUBELET_POD_CONCURRENCY", value_name = "N")]
    pub(crate) pod_concurrency: Option<u16>,
    /// Percent of the TART_HOME volume in use at which cached images are evicted. Default: 85.
    #[arg(
        long,
        env = "TART_KUBELET_IMAGE_GC_HIGH_THRESHOLD",
        value_name = "PERCENT"
    )]
    pub(crate) image_gc_high_threshold: Option<u8>,
    /// Percent of the TART_HOME volume in use that image eviction frees down to. Default: 80.
    #[arg(
        long,
        env = "TART_KUBELET_IMAGE_GC_LOW_THRESHOLD",
        value_name = "PERCENT"
    )]
    pub(crate) image_gc_low_threshold: Option<u8>,
    /// Most bytes the image cache and golden bases may take (e.g. 300Gi). Default: no limit.
    #[arg(
        long,
        env = "TART_KUBELET_IMAGE_CACHE_BUDGET",
        value_name = "QUANTITY",
        value_parser = parse_bytes
    )]
    #[serde(default, deserialize_with = "de::bytes")]
    pub(crate) image_cache_budget: Option<u64>,
    /// Time between image budget passes (each measures the cache and evicts). Default: 1m.
    #[arg(
        long,
        env = "TART_KUBELET_IMAGE_GC_PERIOD",
        value_name = "DURATION",
        value_parser = parse_duration
    )]
    #[serde(default, deserialize_with = "de::duration")]
    pub(crate) image_gc_period: Option<Duration>,
    /// The pre-pull declaration, `<namespace>/<name>` of a ConfigMap. Default:
    /// tart-kubelet/tart-kubelet-prepull.
    #[arg(
        long,
        env = "TART_KUBELET_PREPULL_CONFIG",
        value_name = "NAMESPACE/NAME"
    )]
    pub(crate) prepull_config: Option<String>,
    /// Time between pre-pull passes; the declaration is watched, and a change starts a pass at
    /// once. Default: 1m.
    #[arg(
        long,
        env = "TART_KUBELET_PREPULL_PERIOD",
        value_name = "DURATION",
        value_parser = parse_duration
    )]
    #[serde(default, deserialize_with = "de::duration")]
    pub(crate) prepull_period: Option<Duration>,
    /// How often the host's memory, each VM's CPU and memory and the guests' vitals are
    /// sampled; 0 turns sampling off. Default: 10s.
    #[arg(
        long,
        env = "TART_KUBELET_VITALS_INTERVAL",
        value_name = "DURATION",
        value_parser = parse_duration
    )]
    #[serde(default, deserialize_with = "de::duration")]
    pub(crate) vitals_interval: Option<Duration>,
    /// Linux only: a file whose `vitals key=value …` line overrides the host's memory
    /// readings (pressure, free_percent, swap_used), so tests can drive them. Default: none.
    #[arg(long, env = "TART_KUBELET_VITALS_HOST_FILE", value_name = "FILE")]
    pub(crate) vitals_host_file: Option<PathBuf>,
    /// The VM profiles, one `[vm_profiles.<handler>]` table each (configuration file only).
    #[arg(skip)]
    pub(crate) vm_profiles: Option<BTreeMap<String, ProfileArgs>>,
    /// The profile of Pods without a RuntimeClass (configuration file only). Default: shared
    /// NAT with Tart's disk defaults.
    #[arg(skip)]
    pub(crate) default_vm_profile: Option<String>,
}

macro_rules! merge {
    ($hi:ident, $lo:ident; $($f:ident),* $(,)?) => {
        RunArgs { $($f: $hi.$f.or($lo.$f),)* }
    };
}

impl RunArgs {
    /// `self`'s values where set, else `lower`'s.
    pub(crate) fn or(self, lower: RunArgs) -> RunArgs {
        let hi = self;
        merge!(hi, lower;
            config, kubeconfig, bootstrap_kubeconfig, node_name, tart_program, tart_home, vm_log_dir, guest_dir, pod_log_dir,
            log_file,
            log_format, log_filter, admin_addr, kubelet_port, kubelet_address, node_ip, tls_cert_file,
            tls_private_key_file, client_ca_file, cert_dir,
            kubelet_api_handshake_timeout, kubelet_api_header_timeout, kubelet_api_max_connections,
            kubelet_api_max_streams, kubelet_api_max_log_follows,
            streaming_connection_idle_timeout, node_labels, taint, vm_slots, max_pods,
            memory_reserve, cpu, memory, ephemeral_storage, disk_pressure_free,
            memory_pressure_available,
            lease_duration, lease_renew_interval, node_status_check_interval,
            node_status_report_interval, host_check_interval, host_checks_file, softnet_program,
            quarantine_faults, quarantine_window, quarantine_cooldown, api_timeout, min_tart_version, tart_deadlines,
            tart_attempts, pull_stall_window, run_start_window, ip_wait, guest_launcher,
            guest_launcher_timeout,
            default_termination_grace, pull_credentials, vm_name_prefix, pod_concurrency,
            identity, token_refresh_max, image_gc_high_threshold, image_gc_low_threshold,
            image_cache_budget, image_gc_period, prepull_config, prepull_period, vitals_interval,
            vitals_host_file, vm_profiles, default_vm_profile,
        )
    }
}
