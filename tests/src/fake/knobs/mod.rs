//! The knob file schema (`$TART_HOME/fake-tart/knobs.json`), shared verbatim by the `fake-tart`
//! binary (which reads it on every invocation) and by `tart_kubelet_tests::fake` (which writes
//! it through typed builders). Pure data plus the pure matching rules; no I/O here.
//!
//! Every field is optional in JSON; a missing file means [`Knobs::default`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Default simulated download speed, MB/s (before scaling).
pub const DEFAULT_PULL_MB_PER_S: f64 = 100.0;
/// Default simulated clone duration, ms (before scaling).
pub const DEFAULT_CLONE_MS: u64 = 1000;
/// Default simulated boot duration, ms (before scaling).
pub const DEFAULT_BOOT_MS: u64 = 10_000;
/// Default guest shutdown time after SIGUSR2, ms (before scaling).
pub const DEFAULT_SHUTDOWN_MS: u64 = 500;
/// Default version printed by `--version`.
pub const DEFAULT_VERSION: &str = "2.35.0";

/// The whole knob file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Knobs {
    /// What `--version` prints (default "2.35.0"); also selects version-dependent output quirks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Multiplies every simulated duration (default 0.0 = instant, 1.0 = realistic).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_scale: Option<f64>,
    /// Simulated download speed before scaling (default 100 MB/s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pull_mb_per_s: Option<f64>,
    /// A directory shared by several homes: their pulls share `registry_mb_per_s` (see
    /// `bandwidth.rs`), and each downloading pull keeps an entry there (absent = not shared).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub registry_dir: Option<std::path::PathBuf>,
    /// The registry's bandwidth before scaling, MB/s, split evenly among the pulls active in
    /// `registry_dir` (absent = unlimited: each pull gets its own `pull_mb_per_s`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub registry_mb_per_s: Option<f64>,
    /// Simulated clone (copy) duration before scaling (default 1000 ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clone_ms: Option<u64>,
    /// Simulated boot duration before scaling (default 10000 ms): the default IP delay.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub boot_ms: Option<u64>,
    /// Emulates the Virtualization.framework VM limit: `run` fails with the VM-limit error when
    /// this many other VMs of this `TART_HOME` are already running (absent = no limit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_running_vms: Option<usize>,
    /// `ip` prints each VM's loopback address (`127.64.x.y`, see `home::loopback_ip_for_mac`)
    /// instead of its `192.168.64.x` lease, so the host can reach the guest endpoints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loopback_ips: Option<bool>,
    /// Free space of the volume holding the cache, GB, as auto-prune sees it (absent =
    /// unlimited: auto-prune never deletes anything).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub volume_available_gb: Option<f64>,
    /// The fake host's `softnet` program, which `run --net-softnet*` and `--net-host` start
    /// (default `setuid`: installed, root-owned and setuid).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub softnet: Option<SoftnetSetup>,
    /// The fake host's interfaces `run --net-bridged` may name, in the order Tart lists them
    /// (default: `en0` "Ethernet" and `en1` "Wi-Fi", see [`default_bridge_interfaces`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bridge_interfaces: Option<Vec<BridgeInterface>>,
    /// Remote images the fake registry knows: exact remote name, or "default" for the rest.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub images: BTreeMap<String, ImageKnob>,
    /// Failure-injection rules; the first matching rule with remaining `times` wins.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<Rule>,
    /// Per-VM behaviour of `run`/`ip`/`exec`, keyed by a name glob (`*` only). All matching
    /// entries are merged, the more specific pattern (more literal characters) winning.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub vms: BTreeMap<String, VmKnob>,
}

/// How the fake host's `softnet` is set up (docs/reference/tart-cli.md §3.3).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SoftnetSetup {
    /// On `PATH`, owned by root and setuid: softnet runs.
    #[default]
    Setuid,
    /// Not on `PATH`: `run` fails before it takes the VM's lock.
    Missing,
    /// On `PATH` but neither root-owned and setuid nor allowed passwordless `sudo`: the VM
    /// starts, softnet exits at once, and `run` fails.
    NotSetuid,
}

/// A host interface `tart run --net-bridged` can name (Virtualization.framework's
/// `VZBridgedNetworkInterface`): by its BSD name or its display name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BridgeInterface {
    /// The BSD name, e.g. `en0`.
    pub identifier: String,
    /// The localized display name, e.g. `Ethernet`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
}

/// The interfaces of a Mac mini: `en0` "Ethernet" and `en1` "Wi-Fi".
pub fn default_bridge_interfaces() -> Vec<BridgeInterface> {
    [("en0", "Ethernet"), ("en1", "Wi-Fi")]
        .into_iter()
        .map(|(id, name)| BridgeInterface {
            identifier: id.into(),
            display_name: Some(name.into()),
        })
        .collect()
}

/// One remote image of the fake registry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ImageKnob {
    /// Compressed size in GB (default 25.0): drives the simulated pull duration.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compressed_gb: Option<f64>,
    /// Logical disk size in GB (10^9 bytes; default 50).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk_gb: Option<u64>,
    /// The registry answers 404 for this image.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing: Option<bool>,
    /// The registry requires these credentials (via `TART_REGISTRY_USERNAME`/`PASSWORD`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auth: Option<Auth>,
    /// Guest OS of the image: "darwin" (default) or "linux".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub os: Option<String>,
    /// CPU count of the image (default 4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu: Option<u32>,
    /// Memory of the image in MiB (default 8192).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_mb: Option<u64>,
    /// Changes the manifest digest the tag resolves to (simulates a moved tag).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<u32>,
}

/// Registry credentials an image requires.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Auth {
    /// Expected `TART_REGISTRY_USERNAME`.
    pub username: String,
    /// Expected `TART_REGISTRY_PASSWORD`.
    pub password: String,
}

/// A failure-injection rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// version|list|get|pull|clone|set|run|ip|stop|delete|exec|prune, or "*" for any.
    pub op: String,
    /// Optional VM-name glob (image name for pull; source or new name for clone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vm: Option<String>,
    /// Consumed this many times in total across processes; absent = forever.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub times: Option<u32>,
    /// What happens.
    pub action: Action,
}

/// What a matching rule does (exactly one key in JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Action {
    /// Print nothing more and block until killed (value must be `true`).
    Hang(bool),
    /// Like `hang`, after starting a helper process in the same process group that holds
    /// stdout and stderr open: only a kill of the whole group ends both, and until the helper
    /// is gone the pipes never reach EOF.
    HangWithChild(bool),
    /// Write `stderr` (plus a newline) and exit with `code`, before doing anything.
    Fail(FailAction),
    /// Wait this long (NOT scaled), then behave normally.
    DelayMs(u64),
    /// pull / uncached clone: progress reaches this percentage, then no output forever.
    StallAtPercent(u32),
    /// run: take the config.json lock, then fail with the VM-limit error.
    VmLimit(bool),
    /// run: take the config.json lock, then fail with "Failed to lock auxiliary storage.".
    AuxStorageLocked(bool),
    /// pull/clone: fail with the ENOSPC error.
    NoSpace(bool),
    /// Write invalid UTF-8 on stdout and stderr, then behave normally.
    InvalidUtf8(bool),
    /// pull / uncached clone: at this percentage the connection times out; the five retry
    /// lines go to stdout, then `Error: The request timed out.`, exit 1
    /// (docs/reference/tart-cli.md §2.1, #944).
    TimeoutAtPercent(u32),
}

/// Arguments of [`Action::Fail`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FailAction {
    /// Exit code (default 1).
    #[serde(default = "one")]
    pub code: i32,
    /// The stderr line (default empty).
    #[serde(default)]
    pub stderr: String,
}

fn one() -> i32 {
    1
}

/// Per-VM behaviour (all optional; see the `*_or_default` accessors for defaults).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct VmKnob {
    /// The guest stops by itself this long (scaled) after `run` starts; absent = never.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guest_exit_after_ms: Option<u64>,
    /// 0 = clean shutdown (exit 0); anything else = crash, `run` exits with this code.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guest_exit_code: Option<i32>,
    /// `run` ignores SIGINT.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ignore_sigint: Option<bool>,
    /// The guest ignores the SIGUSR2 shutdown request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ignore_sigusr2: Option<bool>,
    /// Guest shutdown time after SIGUSR2 (scaled; default 500 ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shutdown_ms: Option<u64>,
    /// The IP appears this long (scaled) after `run` starts (default `boot_ms`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ip_delay_ms: Option<u64>,
    /// The IP never appears.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ip_never: Option<bool>,
    /// `ip` returns the IP even when the VM is stopped (a stale DHCP lease,
    /// docs/reference/tart-cli.md §2.11).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stale_lease: Option<bool>,
    /// `exec` cannot reach the guest agent: fails after `exec_connect_ms` (scaled).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exec_unreachable: Option<bool>,
    /// How long an unreachable guest agent takes to fail (scaled; default 10000 ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exec_connect_ms: Option<u64>,
    /// `run` acts as the guest: it starts the real guest launcher against its `--dir` shares,
    /// and the launcher's exit is the guest powering off (docs/guest.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guest_launcher: Option<bool>,
    /// `exec` spawns the command as a real host process in the guest root (implied by
    /// `guest_launcher`); otherwise it answers from a few builtins.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub real_exec: Option<bool>,
    /// The image's `sudo` asks the exec user for a password, so `sudo -n` fails (the default
    /// is Cirrus Labs' passwordless sudo for `admin`, docs/guest.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sudo_password: Option<bool>,
    /// The guest agent answers `exec` this long (scaled) after the call connects.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exec_delay_ms: Option<u64>,
    /// TCP ports the booted guest serves on its loopback address, and how each answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoints: Option<BTreeMap<u16, EndpointState>>,
    /// What the guest's `vm_stat`, `memory_pressure`, `sysctl` and `df` stand-ins report
    /// (under `guest_launcher`); read at every call, so a test can change it mid-run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guest_vitals: Option<GuestVitals>,
    /// A hostile guest (under `guest_launcher`): what it does to its status share once the
    /// launcher has ended, before the guest powers off (`shutdown_ms` later).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guest_attack: Option<GuestAttack>,
}

/// What a hostile guest does to files of its status share (knob `guest_attack`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GuestAttack {
    /// Status share files (`stdout`, `exit_code`, `termination-log`, `vitals`, …) to attack.
    pub files: Vec<String>,
    pub how: AttackKind,
}

/// How a hostile guest replaces or grows a status file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttackKind {
    /// Replace it with a symbolic link to this host path.
    Symlink(String),
    /// Replace it with a FIFO nobody writes.
    #[default]
    Fifo,
    /// Grow it by this many bytes at once (a sparse hole, no write), then append a newline,
    /// `after the flood` and a newline.
    Grow(u64),
}

/// The guest's memory, load and disk as its macOS tools print them (knob `guest_vitals`).
/// Unset fields take a healthy default.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GuestVitals {
    /// `kern.memorystatus_vm_pressure_level`: 1, 2 or 4 (default 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pressure_level: Option<u32>,
    /// `memory_pressure -Q`'s free percentage (default 60).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub free_percent: Option<u8>,
    /// `vm_stat`'s `Pages free` (default 120000).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub free_pages: Option<u64>,
    /// `vm_stat`'s `Pages active` (default 300000).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub active_pages: Option<u64>,
    /// `vm_stat`'s `Pages wired down` (default 90000).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wired_pages: Option<u64>,
    /// `vm_stat`'s `Pages occupied by compressor` (default 10000).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compressed_pages: Option<u64>,
    /// `vm.swapusage`'s used MiB (default 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swap_used_mib: Option<f64>,
    /// `df -k /`'s capacity percentage (default 40).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk_used_percent: Option<u8>,
    /// Jetsam reports (`JetsamEvent-*.ips`) present in the guest (default 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jetsam_kills: Option<u64>,
    /// Tools that fail (exit 1, no output), e.g. `["vm_stat"]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failing: Option<Vec<String>>,
}

/// How a guest endpoint answers (knob `endpoints`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndpointState {
    /// Accepts; any HTTP request gets 200 with a short body.
    Healthy,
    /// Accepts; any HTTP request gets 500 with a short body.
    Failing,
    /// Accepts and never answers.
    Hanging,
    /// Nothing listens: connections are refused.
    Closed,
}

impl EndpointState {
    /// The knob-file spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            EndpointState::Healthy => "healthy",
            EndpointState::Failing => "failing",
            EndpointState::Hanging => "hanging",
            EndpointState::Closed => "closed",
        }
    }

    /// Whether a socket listens on the port in this state.
    pub fn listens(self) -> bool {
        self != EndpointState::Closed
    }
}

macro_rules! overlay {
    ($dst:ident, $src:ident, $($f:ident),*) => { $( if $src.$f.is_some() { $dst.$f = $src.$f.clone(); } )* };
}

impl VmKnob {
    /// Overlays the fields set in `other` onto `self`.
    pub fn overlay(&mut self, other: &VmKnob) {
        overlay!(
            self,
            other,
            guest_exit_after_ms,
            guest_exit_code,
            ignore_sigint,
            ignore_sigusr2,
            shutdown_ms,
            ip_delay_ms,
            ip_never,
            stale_lease,
            exec_unreachable,
            exec_connect_ms,
            guest_launcher,
            real_exec,
            sudo_password,
            exec_delay_ms,
            endpoints,
            guest_vitals,
            guest_attack
        );
    }
}

impl Knobs {
    /// The latency scale (default 0.0 = instant).
    pub fn scale(&self) -> f64 {
        self.latency_scale.unwrap_or(0.0).max(0.0)
    }

    /// Scales a simulated duration in ms to real milliseconds.
    pub fn scaled_ms(&self, ms: u64) -> u64 {
        (ms as f64 * self.scale()).round() as u64
    }

    /// The merged knobs for VM `name`: every matching glob, least specific first.
    pub fn vm(&self, name: &str) -> VmKnob {
        let mut matching: Vec<&String> = self.vms.keys().filter(|g| glob_match(g, name)).collect();
        matching.sort_by_key(|g| g.chars().filter(|c| *c != '*').count());
        let mut merged = VmKnob::default();
        for g in matching {
            merged.overlay(&self.vms[g]);
        }
        merged
    }

    /// The image knob for a remote name: its own entry overlaid on "default".
    pub fn image(&self, remote: &str) -> ImageKnob {
        let mut img = self.images.get("default").cloned().unwrap_or_default();
        if let Some(own) = self.images.get(remote) {
            let own = own.clone();
            overlay!(
                img,
                own,
                compressed_gb,
                disk_gb,
                missing,
                auth,
                os,
                cpu,
                memory_mb,
                revision
            );
        }
        img
    }
}

impl Rule {
    /// Whether this rule applies to operation `op` on any of `names` (ignores `times`).
    pub fn matches(&self, op: &str, names: &[&str]) -> bool {
        if self.op != "*" && self.op != op {
            return false;
        }
        match &self.vm {
            None => true,
            Some(g) if names.is_empty() => g == "*",
            Some(g) => names.iter().any(|n| glob_match(g, n)),
        }
    }
}

/// Glob match where `*` matches any run of characters (possibly empty); nothing else is special.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !text.starts_with(first) || text.len() < first.len() + last.len() || !text.ends_with(last) {
        return false;
    }
    let mut rest = &text[first.len()..text.len() - last.len()];
    for mid in &parts[1..parts.len() - 1] {
        match rest.find(mid) {
            Some(i) => rest = &rest[i + mid.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests;
