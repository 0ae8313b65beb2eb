//! [`MacHost`]: `crate::host::HostInfo` from macOS tools. One `sysctl` call reads every static
//! fact (cached after the first success); memory availability is re-read each time. Every
//! call has a deadline ([`super::shell::run`]); a failed read degrades to "unknown", never a
//! panic. The assembly from tool output ([`StaticFacts::from_sysctl`]) is pure and tested.
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

use super::{parse, shell};
use crate::host::{HostInfo, PidStats, VolumeStats};

/// Deadline of each tool invocation.
const DEADLINE: Duration = Duration::from_secs(5);

/// The sysctl names read once.
pub(crate) const STATIC_SYSCTLS: [&str; 8] = [
    "hw.ncpu",
    "hw.memsize",
    "hw.model",
    "machdep.cpu.brand_string",
    "kern.osproductversion",
    "kern.osrelease",
    "kern.bootsessionuuid",
    "kern.maxproc",
];

/// Facts that do not change while the agent runs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct StaticFacts {
    /// `hw.ncpu`.
    pub cpus: u32,
    /// `hw.memsize`.
    pub memory_bytes: u64,
    /// `hw.model`, e.g. `Mac16,10`.
    pub model: String,
    /// `machdep.cpu.brand_string`, e.g. `Apple M4`.
    pub chip: String,
    /// `macOS <kern.osproductversion>`.
    pub os_image: String,
    /// `kern.osrelease`.
    pub kernel: String,
    /// `kern.bootsessionuuid`.
    pub boot_id: Option<String>,
    /// `kern.maxproc`.
    pub max_proc: Option<u64>,
}

impl StaticFacts {
    /// Pure: `sysctl <names>` output -> facts; `None` when the essentials are missing.
    pub(crate) fn from_sysctl(m: &BTreeMap<String, String>) -> Option<Self> {
        let get = |k: &str| m.get(k).cloned();
        Some(Self {
            cpus: get("hw.ncpu")?.parse().ok()?,
            memory_bytes: get("hw.memsize")?.parse().ok()?,
            model: get("hw.model").unwrap_or_default(),
            chip: get("machdep.cpu.brand_string").unwrap_or_default(),
            os_image: get("kern.osproductversion")
                .map(|v| format!("macOS {v}"))
                .unwrap_or_else(|| "macOS".into()),
            kernel: get("kern.osrelease").unwrap_or_default(),
            boot_id: get("kern.bootsessionuuid"),
            max_proc: get("kern.maxproc").and_then(|v| v.parse().ok()),
        })
    }
}

/// Host facts of the Mac the agent runs on.
#[derive(Debug, Default)]
pub(crate) struct MacHost {
    facts: OnceLock<StaticFacts>,
    uuid: OnceLock<Option<String>>,
}

impl MacHost {
    /// A host whose facts are read lazily.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    fn facts(&self) -> StaticFacts {
        if let Some(f) = self.facts.get() {
            return f.clone();
        }
        match shell::run("/usr/sbin/sysctl", &STATIC_SYSCTLS, DEADLINE)
            .ok()
            .and_then(|t| StaticFacts::from_sysctl(&parse::sysctl_lines(&t)))
        {
            Some(f) => self.facts.get_or_init(|| f).clone(),
            None => {
                tracing::warn!("cannot read host facts with sysctl");
                StaticFacts::default()
            }
        }
    }
}

impl HostInfo for MacHost {
    fn cpu_count(&self) -> u32 {
        self.facts().cpus
    }

    fn memory_bytes(&self) -> u64 {
        self.facts().memory_bytes
    }

    fn memory_available_bytes(&self) -> Option<u64> {
        // kern.memorystatus_level is what `memory_pressure` prints as "free percentage".
        let pct: u64 = shell::run(
            "/usr/sbin/sysctl",
            &["-n", "kern.memorystatus_level"],
            DEADLINE,
        )
        .ok()?
        .trim()
        .parse()
        .ok()?;
        Some(self.memory_bytes() / 100 * pct.min(100))
    }

    fn os_image(&self) -> String {
        self.facts().os_image
    }

    fn kernel_version(&self) -> String {
        self.facts().kernel
    }

    fn model(&self) -> String {
        self.facts().model
    }

    fn chip(&self) -> String {
        self.facts().chip
    }

    fn volume(&self, path: &Path) -> std::io::Result<VolumeStats> {
        crate::host::statvfs(path)
    }

    fn pids(&self) -> Option<PidStats> {
        let max = self.facts().max_proc?;
        let used = shell::run("/bin/ps", &["-A", "-o", "pid="], DEADLINE)
            .ok()?
            .lines()
            .count() as u64;
        Some(PidStats { used, max })
    }

    fn machine_id(&self) -> Option<String> {
        self.uuid
            .get_or_init(|| {
                shell::run(
                    "/usr/sbin/ioreg",
                    &["-rd1", "-c", "IOPlatformExpertDevice"],
                    DEADLINE,
                )
                .ok()
                .and_then(|t| parse::ioreg_platform_uuid(&t))
            })
            .clone()
    }

    fn boot_id(&self) -> Option<String> {
        self.facts().boot_id
    }
}

#[cfg(test)]
mod tests;
