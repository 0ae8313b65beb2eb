//! One look at the host's memory and disk. On macOS from `sysctl` and `memory_pressure`
//! (docs/reference/host-and-conventions.md §3.1); on Linux from `/proc/meminfo` and `/proc/stat`,
//! with an optional file whose `vitals …` line overrides any field, so tests can drive the host's
//! memory pressure and swap. Each source that fails leaves its field empty.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{guest, model::HostSample, model::PressureLevel};
use crate::macos::{parse::vitals as mac, shell};

/// Deadline of each tool.
const DEADLINE: Duration = Duration::from_secs(5);

/// Where host samples come from.
#[derive(Debug, Clone)]
pub(crate) enum HostSource {
    Mac,
    Linux {
        /// `--vitals-host-file`.
        overrides: Option<PathBuf>,
    },
}

impl HostSource {
    /// The source for this platform.
    pub(crate) fn for_platform(overrides: Option<PathBuf>) -> Self {
        if cfg!(target_os = "macos") {
            Self::Mac
        } else {
            Self::Linux { overrides }
        }
    }

    /// One sample (blocking: call from `spawn_blocking`). `tart_home` names the volume whose
    /// free space is read.
    pub(crate) fn sample(&self, tart_home: &Path) -> HostSample {
        let mut s = match self {
            Self::Mac => mac_sample(),
            Self::Linux { overrides } => {
                let mut s = linux_sample();
                if let Some(line) = overrides
                    .as_deref()
                    .and_then(|p| std::fs::read_to_string(p).ok())
                    .and_then(|t| t.lines().find_map(guest::parse_line))
                {
                    s.pressure = line.pressure.or(s.pressure);
                    s.free_percent = line.free_percent.or(s.free_percent);
                    s.swap_used_bytes = line.swap_used_bytes.or(s.swap_used_bytes);
                }
                s
            }
        };
        let vol = tart_home
            .ancestors()
            .find(|p| p.exists())
            .unwrap_or(Path::new("/"));
        s.disk_free_bytes = crate::host::statvfs(vol).ok().map(|v| v.free_bytes);
        s
    }
}

fn sysctl_n(name: &str) -> Option<String> {
    shell::run("/usr/sbin/sysctl", &["-n", name], DEADLINE).ok()
}

fn mac_sample() -> HostSample {
    let pressure = sysctl_n("kern.memorystatus_vm_pressure_level")
        .and_then(|t| mac::pressure_level(&t))
        .and_then(PressureLevel::from_level);
    let free_percent = shell::run("/usr/bin/memory_pressure", &["-Q"], DEADLINE)
        .ok()
        .and_then(|t| mac::memory_free_percent(&t));
    let swap_used_bytes = shell::run("/usr/sbin/sysctl", &["vm.swapusage"], DEADLINE)
        .ok()
        .and_then(|t| mac::swap_usage(&t))
        .map(|s| s.used_bytes);
    let memsize: Option<u64> = sysctl_n("hw.memsize").and_then(|t| t.trim().parse().ok());
    let memory_used_bytes = memsize
        .zip(free_percent)
        .map(|(m, f)| m / 100 * u64::from(100 - f.min(100)));
    HostSample {
        pressure,
        free_percent,
        swap_used_bytes,
        memory_used_bytes,
        ..HostSample::default()
    }
}

/// PURE: `/proc/meminfo` -> (free percent, used bytes, swap used bytes).
pub(crate) fn meminfo(text: &str) -> (Option<u8>, Option<u64>, Option<u64>) {
    let kib = |key: &str| -> Option<u64> {
        let l = text.lines().find(|l| l.starts_with(key))?;
        Some(
            l[key.len()..]
                .split_whitespace()
                .next()?
                .parse::<u64>()
                .ok()?
                * 1024,
        )
    };
    let total = kib("MemTotal:");
    let avail = kib("MemAvailable:");
    let free = total
        .zip(avail)
        .filter(|(t, _)| *t > 0)
        .map(|(t, a)| (a.min(t) * 100 / t) as u8);
    let used = total.zip(avail).map(|(t, a)| t.saturating_sub(a));
    let swap = kib("SwapTotal:")
        .zip(kib("SwapFree:"))
        .map(|(t, f)| t.saturating_sub(f));
    (free, used, swap)
}

/// PURE: the Linux stand-in for macOS's level: critical under 5 % free, warning under 15 %.
pub(crate) fn level_from_free(free: u8) -> PressureLevel {
    match free {
        0..5 => PressureLevel::Critical,
        5..15 => PressureLevel::Warning,
        _ => PressureLevel::Normal,
    }
}

/// PURE: `/proc/stat`'s first line -> CPU seconds of all CPUs (user..steal, in USER_HZ).
pub(crate) fn proc_stat_cpu_seconds(text: &str, ticks: f64) -> Option<f64> {
    let l = text.lines().next()?.strip_prefix("cpu ")?;
    let sum: u64 = l
        .split_whitespace()
        .take(8)
        .filter_map(|v| v.parse::<u64>().ok())
        .enumerate()
        // idle (3) and iowait (4) are not use.
        .filter(|(i, _)| *i != 3 && *i != 4)
        .map(|(_, v)| v)
        .sum();
    Some(sum as f64 / ticks)
}

fn linux_sample() -> HostSample {
    let (free_percent, memory_used_bytes, swap_used_bytes) =
        std::fs::read_to_string("/proc/meminfo")
            .map(|t| meminfo(&t))
            .unwrap_or((None, None, None));
    let ticks = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .unwrap_or(100) as f64;
    let cpu_seconds_total = std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|t| proc_stat_cpu_seconds(&t, ticks));
    HostSample {
        pressure: free_percent.map(level_from_free),
        free_percent,
        swap_used_bytes,
        memory_used_bytes,
        cpu_seconds_total,
        ..HostSample::default()
    }
}

#[cfg(test)]
mod tests;
