//! Plain data exchanged with Tart: names, VM info, options and outcomes.
//!
//! No I/O here, and no reference to any other module of the crate: argv building (`command`)
//! and parsing (`parse`) build on these types.

use std::{fmt, path::PathBuf, time::Duration};

/// A Tart operation (subcommand). Closed set, used for deadlines, errors and metric labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// `tart --version`
    Version,
    /// `tart list`
    List,
    /// `tart get`
    Get,
    /// `tart pull`
    Pull,
    /// `tart clone`
    Clone,
    /// `tart set`
    Set,
    /// `tart run`
    Run,
    /// `tart ip`
    Ip,
    /// `tart stop`
    Stop,
    /// `tart delete`
    Delete,
    /// `tart exec`
    Exec,
    /// `tart prune`
    Prune,
}

impl Op {
    /// Every operation, for pre-registering metric label sets.
    pub const ALL: [Op; 12] = [
        Op::Version,
        Op::List,
        Op::Get,
        Op::Pull,
        Op::Clone,
        Op::Set,
        Op::Run,
        Op::Ip,
        Op::Stop,
        Op::Delete,
        Op::Exec,
        Op::Prune,
    ];

    /// Stable lowercase name, usable as a metric label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Version => "version",
            Op::List => "list",
            Op::Get => "get",
            Op::Pull => "pull",
            Op::Clone => "clone",
            Op::Set => "set",
            Op::Run => "run",
            Op::Ip => "ip",
            Op::Stop => "stop",
            Op::Delete => "delete",
            Op::Exec => "exec",
            Op::Prune => "prune",
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A validated *local* VM name (docs/reference/tart-cli.md §1.6): non-empty, at most
/// [`VmName::MAX_LEN`] bytes, only `[A-Za-z0-9._-]`, not starting with `-` or `.`. Such a name can
/// never be mistaken for a remote image or a flag.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VmName(String);

impl VmName {
    /// Longest accepted name. Keeps `$TART_HOME/vms/<name>/config.json` well under path limits
    /// and the name readable in `tart list`.
    pub const MAX_LEN: usize = 64;

    /// Validate `s` as a local VM name.
    ///
    /// # Errors
    /// Returns a message naming the first rule `s` breaks.
    pub fn new(s: impl Into<String>) -> Result<Self, String> {
        let s = s.into();
        if s.is_empty() {
            return Err("VM name is empty".into());
        }
        if s.len() > Self::MAX_LEN {
            return Err(format!("VM name is longer than {} bytes", Self::MAX_LEN));
        }
        if s.starts_with('-') || s.starts_with('.') {
            return Err("VM name must not start with '-' or '.'".into());
        }
        if let Some(c) = s
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
        {
            return Err(format!(
                "VM name contains {c:?}; only [A-Za-z0-9._-] are allowed"
            ));
        }
        Ok(Self(s))
    }

    /// The name as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for VmName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// VM state as Tart reports it (docs/reference/tart-cli.md §3.1). There is no "starting" state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VmState {
    /// A `tart run` process holds the `config.json` lock.
    Running,
    /// `state.vzvmsave` exists.
    Suspended,
    /// Neither running nor suspended.
    Stopped,
}

/// Where a `tart list` entry lives. Parsed case-insensitively (`OCI` vs pre-2.11 `oci`,
/// docs/reference/tart-cli.md §2.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `$TART_HOME/vms/<name>`.
    Local,
    /// `$TART_HOME/cache/OCIs/...`.
    Oci,
}

/// One entry of `tart list --format json` (docs/reference/tart-cli.md §2.5).
#[derive(Debug, Clone, PartialEq)]
pub struct VmInfo {
    /// Local VM or OCI cache entry.
    pub source: Source,
    /// VM name, or `host/ns:tag` / `host/ns@sha256:…` for cache entries.
    pub name: String,
    /// Logical disk size in GB (10⁹).
    pub disk_gb: u64,
    /// Allocated size in GB (10⁹); an int in `list`, a `"%.3f"` string in `get`
    /// (docs/reference/tart-cli.md §2.4).
    pub size_gb: f64,
    /// Last access, ISO-8601, when the Tart version reports it (2.31+).
    pub accessed: Option<String>,
    /// State (falls back to `Running` when only the legacy bool is present).
    pub state: VmState,
}

/// `tart get <vm> --format json` (docs/reference/tart-cli.md §2.4).
#[derive(Debug, Clone, PartialEq)]
pub struct VmDetails {
    /// `darwin` or `linux`.
    pub os: String,
    /// CPU count.
    pub cpu: u32,
    /// Memory in MiB.
    pub memory_mib: u64,
    /// Disk size in GB (10⁹).
    pub disk_gb: u64,
    /// `raw` or `asif`; `raw` when absent.
    pub disk_format: String,
    /// Allocated size in GB (10⁹), printed by `get` with three decimals.
    pub size_gb: f64,
    /// e.g. `1024x768`.
    pub display: String,
    /// Running, suspended or stopped, from `State` (or the legacy `Running` bool).
    pub state: VmState,
}

/// A parsed `tart --version`: `2.35.0`, or `SNAPSHOT` for builds made outside CI
/// (docs/reference/tart-cli.md §1.7).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    /// The text as printed, trimmed.
    pub raw: String,
    /// `(major, minor, patch)`, `None` for `SNAPSHOT` or unparseable text.
    pub semver: Option<(u32, u32, u32)>,
}

/// Registry credentials, passed to `tart` only through `TART_REGISTRY_*` environment variables
/// (docs/reference/tart-cli.md §1.2), never argv. `Debug` redacts the password.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Credentials {
    /// `TART_REGISTRY_USERNAME`.
    pub username: String,
    /// `TART_REGISTRY_PASSWORD`.
    pub password: String,
    /// `TART_REGISTRY_HOSTNAME`: restricts the credentials to one registry host.
    pub hostname: Option<String>,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .field("hostname", &self.hostname)
            .finish()
    }
}

/// Options for `tart set` (docs/reference/tart-cli.md §2.3). `None`/`false` fields are left out of
/// argv.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SetOpts {
    /// `--cpu N`.
    pub cpu: Option<u16>,
    /// `--memory MiB`.
    pub memory_mib: Option<u64>,
    /// `--disk-size GB` (10⁹ bytes); must not shrink.
    pub disk_size_gb: Option<u16>,
    /// `--random-mac`.
    pub random_mac: bool,
    /// `--random-serial`.
    pub random_serial: bool,
}

/// A `--dir [name:]path[:ro][,tag=TAG]` share (docs/reference/tart-cli.md §2.6).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirShare {
    /// Share name; required when several shares use one tag.
    pub name: Option<String>,
    /// Host path.
    pub path: PathBuf,
    /// Mount read-only.
    pub read_only: bool,
    /// virtio-fs tag; default is the automount tag.
    pub tag: Option<String>,
}

/// VM networking for `tart run` (docs/reference/tart-cli.md §2.6, §3.3).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Network {
    /// Shared NAT (default).
    #[default]
    Shared,
    /// `--net-softnet` with optional allow/block CIDR lists and exposed ports.
    Softnet {
        /// `--net-softnet-allow=...`.
        allow: Vec<String>,
        /// `--net-softnet-block=...`.
        block: Vec<String>,
        /// `--net-softnet-expose=...`: `<host port>:<guest port>` pairs.
        expose: Vec<String>,
    },
    /// `--net-bridged=IFACE`.
    Bridged(String),
    /// `--net-host`.
    Host,
}

impl Network {
    /// The `tart ip --resolver` that finds a guest on this network, per
    /// docs/reference/tart-cli.md §2.11: `dhcp` reads the Mac's `bootpd` leases, which guests on
    /// the shared NAT, softnet and the host-only network take (and `arp` cannot see softnet's
    /// guests); a bridged guest takes its address from the LAN's DHCP server, so only `arp`
    /// finds it, once the guest has sent ARP traffic. [`IpResolver::Agent`] works on every
    /// network but needs the Tart Guest Agent in the image, so it is never this default.
    pub fn ip_resolver(&self) -> IpResolver {
        match self {
            Network::Shared | Network::Softnet { .. } | Network::Host => IpResolver::Dhcp,
            Network::Bridged(_) => IpResolver::Arp,
        }
    }
}

/// `sync=` of `--root-disk-opts` (docs/reference/tart-cli.md §2.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiskSync {
    /// `sync=full` (Tart's default).
    Full,
    /// `sync=fsync`.
    Fsync,
    /// `sync=none`: writes are never flushed to the host's disk.
    None,
}

impl DiskSync {
    /// Every mode, in the order error messages list them.
    pub const ALL: [DiskSync; 3] = [Self::Full, Self::Fsync, Self::None];

    /// The word after `sync=`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Full => "full",
            Self::Fsync => "fsync",
            Self::None => "none",
        }
    }
}

/// `caching=` of `--root-disk-opts` (docs/reference/tart-cli.md §2.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiskCaching {
    /// `caching=automatic` (Tart's default for macOS guests).
    Automatic,
    /// `caching=cached`: the host's page cache holds the disk's blocks.
    Cached,
    /// `caching=uncached`.
    Uncached,
}

impl DiskCaching {
    /// Every mode, in the order error messages list them.
    pub const ALL: [DiskCaching; 3] = [Self::Automatic, Self::Cached, Self::Uncached];

    /// The word after `caching=`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Automatic => "automatic",
            Self::Cached => "cached",
            Self::Uncached => "uncached",
        }
    }
}

/// The root disk's `--root-disk-opts` (docs/reference/tart-cli.md §2.6); `None` leaves
/// Tart's default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RootDiskOpts {
    /// `sync=`.
    pub sync: Option<DiskSync>,
    /// `caching=`.
    pub caching: Option<DiskCaching>,
}

/// Options for `tart run` (docs/reference/tart-cli.md §2.6). `--no-graphics` is always passed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOpts {
    /// `--dir` shares.
    pub dirs: Vec<DirShare>,
    /// Shared NAT, softnet, bridged or host networking.
    pub network: Network,
    /// `--root-disk-opts`; nothing is passed when both are Tart's default.
    pub root_disk: RootDiskOpts,
    /// `--suspendable`.
    pub suspendable: bool,
    /// Per-VM log file for the run process's stdout and stderr.
    pub log_path: PathBuf,
    /// The log file is truncated to its last half when it passes this size.
    pub log_cap_bytes: u64,
    /// An exit within this window after spawn is a start failure, classified from the log.
    pub start_window: Duration,
}

/// `tart ip --resolver` (docs/reference/tart-cli.md §2.11).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum IpResolver {
    /// `/var/db/dhcpd_leases` (default).
    #[default]
    Dhcp,
    /// `arp -an`, for bridged networking.
    Arp,
    /// The Tart Guest Agent over `control.sock`.
    Agent,
}

impl IpResolver {
    /// The value passed to `--resolver`.
    pub fn as_str(self) -> &'static str {
        match self {
            IpResolver::Dhcp => "dhcp",
            IpResolver::Arp => "arp",
            IpResolver::Agent => "agent",
        }
    }
}

/// `tart prune` options (docs/reference/tart-cli.md §2.12).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PruneOpts {
    /// `--entries vms` instead of the default `caches`.
    pub vms: bool,
    /// `--older-than DAYS`.
    pub older_than_days: Option<u32>,
    /// `--space-budget GB`.
    pub space_budget_gb: Option<u64>,
}

/// Output of `tart exec`. Its exit code is the guest command's (docs/reference/tart-cli.md §2.10).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecOutput {
    /// Exit code of the guest command.
    pub exit_code: i32,
    /// stdout, decoded lossily.
    pub stdout: String,
    /// stderr, decoded lossily.
    pub stderr: String,
}

/// How a `tart run` process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitReason {
    /// Exit 0: the guest shut down, or `tart stop`/SIGINT.
    Completed,
    /// Non-zero exit code.
    Failed,
    /// Killed by a signal (SIGKILL, SIGTERM: power cut, docs/reference/tart-cli.md §3.2).
    Signaled,
    /// The process is gone but was not our child (re-attached); the outcome was inferred from
    /// its log.
    Unknown,
}

/// The end of a `tart run` process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExitInfo {
    /// Whether it completed, failed, was signalled or ended unseen.
    pub reason: ExitReason,
    /// Exit code when known.
    pub code: Option<i32>,
    /// Terminating signal when known.
    pub signal: Option<i32>,
}

impl ExitInfo {
    /// An end nobody saw: the process was not our child, or its watcher is gone.
    pub(crate) fn unknown() -> Self {
        Self {
            reason: ExitReason::Unknown,
            code: None,
            signal: None,
        }
    }
}

/// How `Tart::stop` ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopOutcome {
    /// The guest shut down within the grace after SIGUSR2.
    GuestShutdown,
    /// `tart stop` stopped it (SIGINT: hard power-off, clean for Tart).
    TartStop,
    /// It had to be SIGKILLed.
    Killed,
    /// It was not running.
    AlreadyStopped,
}

impl StopOutcome {
    /// Stable lowercase name, usable as a metric label value.
    pub fn as_str(self) -> &'static str {
        match self {
            StopOutcome::GuestShutdown => "guest_shutdown",
            StopOutcome::TartStop => "tart_stop",
            StopOutcome::Killed => "killed",
            StopOutcome::AlreadyStopped => "already_stopped",
        }
    }
}
