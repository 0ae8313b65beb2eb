//! Host facts behind a seam: the [`HostInfo`] trait answers CPU, memory, OS, machine model
//! and chip, the `TART_HOME` volume's size and free space, and process counts.
//!
//! Implementations: [`FixedHost`] (fixed values, for tests and for Linux CI runs),
//! [`LinuxHost`] (reads `/proc` and `statvfs`) and, on macOS, the `macos` module's `MacHost`
//! [`HostFacts::gather`] takes one snapshot; it may block briefly, so call it
//! from `spawn_blocking`. Everything downstream (node status) is pure over [`HostFacts`].

use std::{
    net::{IpAddr, Ipv4Addr, UdpSocket},
    path::Path,
};

/// Size and free space of a file system.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct VolumeStats {
    pub total_bytes: u64,
    /// Bytes available to unprivileged users.
    pub free_bytes: u64,
}

/// Process counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PidStats {
    /// Processes running.
    pub used: u64,
    /// The system's limit.
    pub max: u64,
}

/// Source of host facts.
pub(crate) trait HostInfo: Send + Sync + 'static {
    /// Logical CPUs.
    fn cpu_count(&self) -> u32;
    /// Physical memory in bytes.
    fn memory_bytes(&self) -> u64;
    /// Memory available to new work, when known.
    fn memory_available_bytes(&self) -> Option<u64>;
    /// OS name and version, e.g. `macOS 15.3.1`.
    fn os_image(&self) -> String;
    /// Kernel release, e.g. `24.3.0`.
    fn kernel_version(&self) -> String;
    /// Machine model identifier, e.g. `Mac14,3`.
    fn model(&self) -> String;
    /// Chip, e.g. `Apple M2`.
    fn chip(&self) -> String;
    /// Size and free space of the volume holding `path`.
    ///
    /// # Errors
    /// The `statvfs`/`statfs` error.
    fn volume(&self, path: &Path) -> std::io::Result<VolumeStats>;
    /// Process counts, when known.
    fn pids(&self) -> Option<PidStats>;
    /// Stable machine identifier (`systemUUID`), when known.
    fn machine_id(&self) -> Option<String> {
        None
    }
    /// Identifier of the current boot, when known.
    fn boot_id(&self) -> Option<String> {
        None
    }
}

/// One snapshot of every fact the node status needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HostFacts {
    /// Logical CPUs.
    pub cpus: u32,
    /// Physical memory.
    pub memory_bytes: u64,
    /// Available memory, when known.
    pub memory_available_bytes: Option<u64>,
    /// e.g. `macOS 15.3.1`.
    pub os_image: String,
    /// Kernel release.
    pub kernel_version: String,
    /// e.g. `Mac14,3`.
    pub model: String,
    /// e.g. `Apple M2`.
    pub chip: String,
    /// The `TART_HOME` volume; `None` when it could not be read.
    pub tart_home_volume: Option<VolumeStats>,
    /// Process counts.
    pub pids: Option<PidStats>,
    pub machine_id: String,
    pub boot_id: String,
}

impl HostFacts {
    /// Read every fact from `host`. May block (file system calls, shell-outs).
    pub(crate) fn gather(host: &dyn HostInfo, tart_home: &Path) -> Self {
        // TART_HOME may not exist yet on a fresh host; its volume is its nearest ancestor's.
        let vol_path = tart_home
            .ancestors()
            .find(|p| p.exists())
            .unwrap_or(Path::new("/"));
        Self {
            cpus: host.cpu_count(),
            memory_bytes: host.memory_bytes(),
            memory_available_bytes: host.memory_available_bytes(),
            os_image: host.os_image(),
            kernel_version: host.kernel_version(),
            model: host.model(),
            chip: host.chip(),
            tart_home_volume: host.volume(vol_path).ok(),
            pids: host.pids(),
            machine_id: host.machine_id().unwrap_or_default(),
            boot_id: host.boot_id().unwrap_or_default(),
        }
    }
}

/// Fixed facts (tests, and Linux CI where the fake pretends to be a Mac mini).
#[derive(Debug, Clone)]
pub(crate) struct FixedHost {
    /// Every value returned, except the volume when `volume` is `None`.
    pub facts: HostFacts,
    /// `None` = report the real volume via `statvfs`.
    pub volume: Option<VolumeStats>,
}

impl Default for FixedHost {
    /// An M2 Mac mini with 8 cores, 24 GiB and macOS 15.3.1.
    fn default() -> Self {
        Self {
            facts: HostFacts {
                cpus: 8,
                memory_bytes: 24 << 30,
                memory_available_bytes: Some(16 << 30),
                os_image: "macOS 15.3.1".into(),
                kernel_version: "24.3.0".into(),
                model: "Mac14,3".into(),
                chip: "Apple M2".into(),
                tart_home_volume: None,
                pids: Some(PidStats {
                    used: 600,
                    max: 8000,
                }),
                machine_id: "00000000-0000-0000-0000-000000000000".into(),
                boot_id: String::new(),
            },
            volume: None,
        }
    }
}

impl HostInfo for FixedHost {
    fn cpu_count(&self) -> u32 {
        self.facts.cpus
    }
    fn memory_bytes(&self) -> u64 {
        self.facts.memory_bytes
    }
    fn memory_available_bytes(&self) -> Option<u64> {
        self.facts.memory_available_bytes
    }
    fn os_image(&self) -> String {
        self.facts.os_image.clone()
    }
    fn kernel_version(&self) -> String {
        self.facts.kernel_version.clone()
    }
    fn model(&self) -> String {
        self.facts.model.clone()
    }
    fn chip(&self) -> String {
        self.facts.chip.clone()
    }
    fn volume(&self, path: &Path) -> std::io::Result<VolumeStats> {
        match self.volume {
            Some(v) => Ok(v),
            None => statvfs(path),
        }
    }
    fn pids(&self) -> Option<PidStats> {
        self.facts.pids
    }
    fn machine_id(&self) -> Option<String> {
        Some(self.facts.machine_id.clone())
    }
}

/// The real Linux host, read from `/proc` and `statvfs`.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct LinuxHost;

impl HostInfo for LinuxHost {
    fn cpu_count(&self) -> u32 {
        std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
    }
    fn memory_bytes(&self) -> u64 {
        meminfo("MemTotal:").unwrap_or(0)
    }
    fn memory_available_bytes(&self) -> Option<u64> {
        meminfo("MemAvailable:")
    }
    fn os_image(&self) -> String {
        format!("Linux {}", self.kernel_version())
    }
    fn kernel_version(&self) -> String {
        read_trim("/proc/sys/kernel/osrelease").unwrap_or_default()
    }
    fn model(&self) -> String {
        "linux".into()
    }
    fn chip(&self) -> String {
        std::env::consts::ARCH.into()
    }
    fn volume(&self, path: &Path) -> std::io::Result<VolumeStats> {
        statvfs(path)
    }
    fn pids(&self) -> Option<PidStats> {
        let max = read_trim("/proc/sys/kernel/pid_max")?.parse().ok()?;
        let used = std::fs::read_dir("/proc")
            .ok()?
            .filter_map(Result::ok)
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .bytes()
                    .all(|b| b.is_ascii_digit())
            })
            .count() as u64;
        Some(PidStats { used, max })
    }
    fn machine_id(&self) -> Option<String> {
        read_trim("/etc/machine-id")
    }
    fn boot_id(&self) -> Option<String> {
        read_trim("/proc/sys/kernel/random/boot_id")
    }
}

fn read_trim(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_owned())
}

fn meminfo(key: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    parse_meminfo(&text, key)
}

/// `MemTotal:       24512345 kB` -> bytes.
fn parse_meminfo(text: &str, key: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(key))?;
    let kb: u64 = line[key.len()..].split_whitespace().next()?.parse().ok()?;
    Some(kb * 1024)
}

/// `statvfs(2)` of `path`.
///
/// # Errors
/// The system call's error.
pub(crate) fn statvfs(path: &Path) -> std::io::Result<VolumeStats> {
    let s = nix::sys::statvfs::statvfs(path).map_err(std::io::Error::from)?;
    let frag = s.fragment_size() as u64;
    Ok(VolumeStats {
        total_bytes: s.blocks() as u64 * frag,
        free_bytes: s.blocks_available() as u64 * frag,
    })
}

/// The local address the kernel would use to reach `peer` (no packet is sent): the node's
/// `InternalIP`. Falls back to loopback.
pub(crate) fn local_ip_towards(peer: IpAddr) -> IpAddr {
    let bind: IpAddr = if peer.is_ipv4() {
        Ipv4Addr::UNSPECIFIED.into()
    } else {
        std::net::Ipv6Addr::UNSPECIFIED.into()
    };
    UdpSocket::bind((bind, 0))
        .and_then(|s| {
            s.connect((peer, 443))?;
            s.local_addr()
        })
        .map(|a| a.ip())
        .unwrap_or(Ipv4Addr::LOCALHOST.into())
}

#[cfg(test)]
mod tests;
