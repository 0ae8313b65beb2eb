//! Pure parsers of the exact text macOS tools print (host-and-conventions.md §3, §1.2).
//! Tested on Linux against those formats; no I/O here.
use std::collections::BTreeMap;

/// `sysctl a.b c.d` output: one `name: value` per line (SYSCMDS `show_var`).
pub fn sysctl_lines(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(": ")?;
            Some((k.trim().to_string(), v.trim().to_string()))
        })
        .collect()
}

/// `kern.memorystatus_vm_pressure_level`: the dispatch encoding, not xnu's internal enum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PressureLevel {
    /// 1.
    Normal,
    /// 2 (internal Warning or Urgent).
    Warning,
    /// 4.
    Critical,
}

/// `1`, `2` or `4` -> level; anything else (0, 3, junk) is `None`, never "normal".
pub fn pressure_level(text: &str) -> Option<PressureLevel> {
    match text.trim() {
        "1" => Some(PressureLevel::Normal),
        "2" => Some(PressureLevel::Warning),
        "4" => Some(PressureLevel::Critical),
        _ => None,
    }
}

/// `vm.swapusage` in bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Swap {
    /// Total swap.
    pub total: u64,
    pub used: u64,
    pub free: u64,
    /// `(encrypted)` present.
    pub encrypted: bool,
}

fn size_with_unit(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, unit) = s.split_at(s.find(|c: char| c.is_ascii_alphabetic())?);
    let mult: f64 = match unit {
        "K" => 1024.0,
        "M" => 1024.0 * 1024.0,
        "G" => 1024.0 * 1024.0 * 1024.0,
        "T" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    Some((num.parse::<f64>().ok()? * mult).round() as u64)
}

/// `sysctl vm.swapusage` -> [`Swap`]: `vm.swapusage: total = 2048.00M  used = 1017.50M
/// free = 1030.50M  (encrypted)`. The `vm.swapusage: ` prefix is optional (`-n`).
pub fn swapusage(text: &str) -> Option<Swap> {
    let t = text.trim().trim_start_matches("vm.swapusage:");
    let field = |name: &str| {
        let rest = &t[t.find(&format!("{name} = "))? + name.len() + 3..];
        size_with_unit(rest.split_whitespace().next()?)
    };
    Some(Swap {
        total: field("total")?,
        used: field("used")?,
        free: field("free")?,
        encrypted: t.contains("(encrypted)"),
    })
}

/// `sysctl -n vm.loadavg` -> `[1m, 5m, 15m]` from `{ 1.28 1.18 1.13 }`.
pub fn loadavg(text: &str) -> Option<[f64; 3]> {
    let inner = text.trim().strip_prefix('{')?.strip_suffix('}')?;
    let v: Vec<f64> = inner
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    (v.len() == 3).then(|| [v[0], v[1], v[2]])
}

/// `vm_stat` (no interval argument): the page size and each counter by its label (without
/// the trailing colon; `"Translation faults"` keeps its quotes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VmStat {
    /// From `Mach Virtual Memory Statistics: (page size of 16384 bytes)`.
    pub page_size: u64,
    /// Counter values in pages (or events).
    pub counters: BTreeMap<String, u64>,
}

impl VmStat {
    /// Bytes of a page counter.
    pub fn bytes(&self, label: &str) -> Option<u64> {
        Some(self.counters.get(label)? * self.page_size)
    }
}

/// Parses `vm_stat`: header, then `printf("%-30s %16llu.\n", label, n)` lines.
pub fn vm_stat(text: &str) -> Option<VmStat> {
    let mut lines = text.lines();
    let header = lines.next()?;
    let ps = header
        .split("page size of ")
        .nth(1)?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let counters = lines
        .filter_map(|l| {
            let (label, n) = l.rsplit_once(':')?;
            let n = n.trim().strip_suffix('.')?.parse().ok()?;
            Some((label.trim().to_string(), n))
        })
        .collect();
    Some(VmStat {
        page_size: ps,
        counters,
    })
}

/// `memory_pressure -Q` -> the free percentage from `System-wide memory free percentage: 64%`.
pub fn memory_free_percent(text: &str) -> Option<u8> {
    text.lines().find_map(|l| {
        l.trim()
            .strip_prefix("System-wide memory free percentage:")?
            .trim()
            .strip_suffix('%')?
            .parse()
            .ok()
    })
}

/// One row of `df -k <path>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DfRow {
    /// Device.
    pub filesystem: String,
    /// Size in bytes.
    pub total_bytes: u64,
    /// Used bytes (APFS-aware on macOS).
    pub used_bytes: u64,
    pub available_bytes: u64,
    /// Mount point (may contain spaces).
    pub mounted_on: String,
}

/// `df -k <path>` on macOS, with inode columns (`Filesystem 1024-blocks Used Available
/// Capacity iused ifree %iused  Mounted on`) or without (`-P`).
pub fn df_k(text: &str) -> Option<DfRow> {
    let mut lines = text.lines();
    let header = lines.next()?;
    let with_inodes = header.contains("iused");
    let row = lines.next()?;
    let f: Vec<&str> = row.split_whitespace().collect();
    let fixed = if with_inodes { 8 } else { 5 };
    if f.len() <= fixed {
        return None;
    }
    // The mount point is everything after the fixed columns (it may contain spaces).
    let mount_at = {
        let mut idx = 0;
        let mut rest = row;
        for col in f.iter().take(fixed) {
            let p = rest.find(col)? + col.len();
            idx += p;
            rest = &rest[p..];
        }
        idx
    };
    let kb = |s: &str| s.parse::<u64>().ok().map(|v| v * 1024);
    Some(DfRow {
        filesystem: f[0].to_string(),
        total_bytes: kb(f[1])?,
        used_bytes: kb(f[2])?,
        available_bytes: kb(f[3])?,
        mounted_on: row[mount_at..].trim().to_string(),
    })
}

/// `sw_vers` -> (ProductName, ProductVersion, BuildVersion); tolerant of one or two tabs.
pub fn sw_vers(text: &str) -> Option<(String, String, String)> {
    let get = |key: &str| {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == key).then(|| v.trim().to_string())
        })
    };
    Some((
        get("ProductName")?,
        get("ProductVersion")?,
        get("BuildVersion")?,
    ))
}

/// `pmset -g therm`: the CPU speed limit in percent (100 = not throttled). No `CPU_*` lines,
/// as on most Apple silicon, means not throttled.
pub fn pmset_speed_limit(text: &str) -> u32 {
    text.lines()
        .find_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k.trim() == "CPU_Speed_Limit").then(|| v.trim().parse().ok())?
        })
        .unwrap_or(100)
}

/// `ioreg -rd1 -c IOPlatformExpertDevice` -> the value of `"IOPlatformUUID" = "..."`.
pub fn ioreg_platform_uuid(text: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once('=')?;
        (k.trim() == "\"IOPlatformUUID\"").then(|| v.trim().trim_matches('"').to_string())
    })
}

/// `defaults read <domain> <key>` of an old-style (NeXTSTEP) dictionary: the value of `key`
/// inside `{ key = value; ... }`, unquoted. Used for `bootpd` -> `DHCPLeaseTimeSecs`.
pub fn defaults_dict_value(text: &str, key: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let (k, v) = l.trim().split_once(" = ")?;
        (k.trim().trim_matches('"') == key).then(|| {
            v.trim()
                .trim_end_matches(';')
                .trim()
                .trim_matches('"')
                .to_string()
        })
    })
}

#[cfg(test)]
mod tests;
