//! Pure parsers of the memory, swap and process texts macOS tools print on the host
//! (docs/reference/host-and-conventions.md §3.1, §3.3), for the vitals sampler. The guest launcher
//! reads the guest's `vm_stat`, `df` and load itself (docs/guest.md, "Vitals").

/// `memory_pressure -Q`: the percentage in `System-wide memory free percentage: 64%`.
pub(crate) fn memory_free_percent(text: &str) -> Option<u8> {
    let line = text
        .lines()
        .find(|l| l.starts_with("System-wide memory free percentage:"))?;
    let v = line.rsplit(':').next()?.trim().trim_end_matches('%');
    v.parse::<u8>().ok().filter(|p| *p <= 100)
}

/// `sysctl -n kern.memorystatus_vm_pressure_level`: the dispatch encoding 1, 2 or 4.
pub(crate) fn pressure_level(text: &str) -> Option<u32> {
    text.trim().parse().ok().filter(|l| matches!(l, 1 | 2 | 4))
}

/// `sysctl vm.swapusage`, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SwapUsage {
    pub total_bytes: u64,
    pub used_bytes: u64,
    pub free_bytes: u64,
}

/// `vm.swapusage: total = 2048.00M  used = 1017.50M  free = 1030.50M  (encrypted)`; the unit
/// is read from each value (`M` in practice, `K`/`G`/`T` accepted).
pub(crate) fn swap_usage(text: &str) -> Option<SwapUsage> {
    let body = text.trim().trim_start_matches("vm.swapusage:");
    let field = |name: &str| -> Option<u64> {
        let rest = body.split(&format!("{name} = ")).nth(1)?;
        bytes_with_unit(rest.split_whitespace().next()?)
    };
    Some(SwapUsage {
        total_bytes: field("total")?,
        used_bytes: field("used")?,
        free_bytes: field("free")?,
    })
}

fn bytes_with_unit(v: &str) -> Option<u64> {
    let (num, unit) = v.split_at(v.len().checked_sub(1)?);
    let shift = match unit {
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        _ => return None,
    };
    let n: f64 = num.parse().ok()?;
    (n >= 0.0).then(|| (n * f64::from(1u32 << shift)).round() as u64)
}

/// One process from `ps -axo pid=,ppid=,time=,rss=,comm=`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PsRow {
    pub pid: i32,
    pub ppid: i32,
    /// Accumulated user + system CPU time.
    pub cpu_seconds: f64,
    pub rss_bytes: u64,
    /// The executable path (`comm` is the whole path on macOS).
    pub comm: String,
}

/// `ps -axo pid=,ppid=,time=,rss=,comm=` rows; unparsable rows are skipped.
pub(crate) fn ps_rows(text: &str) -> Vec<PsRow> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let pid = it.next()?.parse().ok()?;
            let ppid = it.next()?.parse().ok()?;
            let cpu_seconds = cpu_time(it.next()?)?;
            let rss_kib: u64 = it.next()?.parse().ok()?;
            let comm = it.collect::<Vec<_>>().join(" ");
            Some(PsRow {
                pid,
                ppid,
                cpu_seconds,
                rss_bytes: rss_kib * 1024,
                comm,
            })
        })
        .collect()
}

/// BSD `ps` CPU time: `M:SS.cc` (minutes may pass 59), or `H:MM:SS[.cc]`, optionally with a
/// `D-` day prefix. `ps`'s elapsed time (`etime`, `[[DD-]HH:]MM:SS`) has the same form.
pub(crate) fn cpu_time(v: &str) -> Option<f64> {
    let (days, rest) = match v.split_once('-') {
        Some((d, r)) => (d.parse::<f64>().ok()?, r),
        None => (0.0, v),
    };
    let parts: Vec<f64> = rest
        .split(':')
        .map(|p| p.parse::<f64>().ok())
        .collect::<Option<_>>()?;
    let secs = match parts.as_slice() {
        [m, s] => m * 60.0 + s,
        [h, m, s] => h * 3600.0 + m * 60.0 + s,
        _ => return None,
    };
    Some(days * 86400.0 + secs)
}

/// The Virtualization framework's per-VM XPC service (docs/reference/host-and-conventions.md §3.3).
pub(crate) const VZ_XPC_SERVICE: &str = "com.apple.Virtualization.VirtualMachine";

/// `lsof -Fn -p <pid>` of a VM's XPC process -> the Tart VM whose `…/vms/<name>/disk.img` it
/// holds open.
pub(crate) fn lsof_tart_vm(text: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let path = l.strip_prefix('n')?;
        let dir = path.strip_suffix("/disk.img")?;
        let (parent, name) = dir.rsplit_once('/')?;
        parent.ends_with("/vms").then(|| name.to_owned())
    })
}

#[cfg(test)]
mod tests;
