//! The agent's own process: `process_cpu_seconds_total`, `process_resident_memory_bytes`,
//! `process_virtual_memory_bytes`, `process_open_fds`, `process_max_fds` and
//! `process_start_time_seconds`, as Prometheus' client libraries name them, so the standard
//! dashboards' process panels read them as for any exporter.
//!
//! CPU time (`getrusage`) and the descriptor limit (`getrlimit`) are read the same way on both
//! platforms, and open descriptors by listing `/proc/self/fd` (Linux) or `/dev/fd` (macOS). Memory
//! and the start time come from `/proc/self/stat` on Linux and from `ps -o rss=,vsz=,etime=` on
//! macOS; both texts have pure parsers here. [`ProcessMetrics`] is a collector over the latest
//! [`Sample`], which [`run`] refreshes every [`PERIOD`] on a blocking thread; a reading that
//! failed is absent from the exposition, never 0.

use std::{
    sync::{Arc, Mutex, PoisonError},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use prometheus_client::{
    collector::Collector,
    encoding::{DescriptorEncoder, EncodeMetric},
    metrics::{counter::ConstCounter, gauge::ConstGauge},
    registry::Registry,
};
use tokio::sync::watch;

/// How often the process is read.
pub(crate) const PERIOD: Duration = Duration::from_secs(5);

/// Deadline of `ps` on macOS.
const PS_DEADLINE: Duration = Duration::from_secs(5);

/// One reading of the process; each field is `None` when it could not be read.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Sample {
    pub cpu_seconds_total: Option<f64>,
    pub resident_memory_bytes: Option<u64>,
    pub virtual_memory_bytes: Option<u64>,
    pub open_fds: Option<u64>,
    pub max_fds: Option<u64>,
    /// Unix seconds.
    pub start_time_seconds: Option<f64>,
}

/// The collector of the `process_*` families. Clones share the latest sample.
#[derive(Debug, Clone, Default)]
pub(crate) struct ProcessMetrics {
    latest: Arc<Mutex<Sample>>,
}

impl ProcessMetrics {
    /// Registers the collector at the registry's root (the names have no `tart_kubelet_`
    /// prefix, as every exporter's `process_*`) and takes a first reading.
    pub(crate) fn register(registry: &mut Registry) -> Self {
        let m = Self::default();
        m.set(read());
        registry.register_collector(Box::new(m.clone()));
        m
    }

    /// The latest sample.
    pub(crate) fn latest(&self) -> Sample {
        *self.latest.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn set(&self, s: Sample) {
        *self.latest.lock().unwrap_or_else(PoisonError::into_inner) = s;
    }
}

impl Collector for ProcessMetrics {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let s = self.latest();
        if let Some(v) = s.cpu_seconds_total {
            let c = ConstCounter::new(v);
            let e = encoder.encode_descriptor(
                "process_cpu_seconds",
                "Total user and system CPU time spent in seconds",
                None,
                c.metric_type(),
            )?;
            c.encode(e)?;
        }
        let gauges: [(&str, &str, Option<f64>); 5] = [
            (
                "process_resident_memory_bytes",
                "Resident memory size in bytes",
                s.resident_memory_bytes.map(|v| v as f64),
            ),
            (
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes",
                s.virtual_memory_bytes.map(|v| v as f64),
            ),
            (
                "process_open_fds",
                "Number of open file descriptors",
                s.open_fds.map(|v| v as f64),
            ),
            (
                "process_max_fds",
                "Maximum number of open file descriptors",
                s.max_fds.map(|v| v as f64),
            ),
            (
                "process_start_time_seconds",
                "Start time of the process since unix epoch in seconds",
                s.start_time_seconds,
            ),
        ];
        for (name, help, value) in gauges {
            if let Some(v) = value {
                let g = ConstGauge::new(v);
                let e = encoder.encode_descriptor(name, help, None, g.metric_type())?;
                g.encode(e)?;
            }
        }
        Ok(())
    }
}

/// Refreshes `m` every [`PERIOD`] until `shutdown` turns true.
pub(crate) async fn run(m: ProcessMetrics, mut shutdown: watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(PERIOD);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = shutdown.wait_for(|s| *s) => return,
        }
        if let Ok(s) = tokio::task::spawn_blocking(read).await {
            m.set(s);
        }
    }
}

/// One reading of this process (blocking: runs `ps` on macOS).
pub(crate) fn read() -> Sample {
    let mut s = Sample {
        cpu_seconds_total: cpu_seconds(),
        open_fds: open_fds(),
        max_fds: nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
            .ok()
            .map(|(soft, _)| soft),
        ..Sample::default()
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    if cfg!(target_os = "macos") {
        let pid = std::process::id().to_string();
        let args = ["-o", "rss=,vsz=,etime=", "-p", pid.as_str()];
        if let Some(ps) = crate::macos::shell::run("/bin/ps", &args, PS_DEADLINE)
            .ok()
            .and_then(|t| parse_ps(&t))
        {
            s.resident_memory_bytes = Some(ps.rss_bytes);
            s.virtual_memory_bytes = Some(ps.vsz_bytes);
            s.start_time_seconds = Some((now - ps.elapsed_seconds as f64).floor());
        }
    } else if let Ok(stat) = std::fs::read_to_string("/proc/self/stat") {
        let sysconf = |v| nix::unistd::sysconf(v).ok().flatten();
        let ticks = sysconf(nix::unistd::SysconfVar::CLK_TCK).unwrap_or(100) as f64;
        let page = sysconf(nix::unistd::SysconfVar::PAGE_SIZE).unwrap_or(4096) as u64;
        let boot = std::fs::read_to_string("/proc/stat")
            .ok()
            .and_then(|t| boot_time(&t));
        if let Some(p) = parse_proc_stat(&stat) {
            s.resident_memory_bytes = Some(p.rss_pages * page);
            s.virtual_memory_bytes = Some(p.vsize_bytes);
            s.start_time_seconds = boot.map(|b| b as f64 + p.start_ticks as f64 / ticks);
        }
    }
    s
}

fn cpu_seconds() -> Option<f64> {
    use nix::sys::resource::{UsageWho, getrusage};
    let u = getrusage(UsageWho::RUSAGE_SELF).ok()?;
    let secs = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
    Some(secs(u.user_time()) + secs(u.system_time()))
}

fn open_fds() -> Option<u64> {
    let dir = if cfg!(target_os = "macos") {
        "/dev/fd"
    } else {
        "/proc/self/fd"
    };
    Some(std::fs::read_dir(dir).ok()?.count() as u64)
}

/// The fields of `/proc/self/stat` read here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProcStat {
    /// Start time, in clock ticks after boot (field 22).
    pub start_ticks: u64,
    /// Virtual memory size in bytes (field 23).
    pub vsize_bytes: u64,
    /// Resident set size in pages (field 24).
    pub rss_pages: u64,
}

/// PURE: `/proc/<pid>/stat`. The command name is in parentheses and may hold spaces and
/// parentheses, so fields are counted after the last `)`.
pub(crate) fn parse_proc_stat(text: &str) -> Option<ProcStat> {
    let (_, rest) = text.rsplit_once(')')?;
    // rest starts at field 3 (state).
    let f: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| f.get(n - 3)?.parse::<u64>().ok();
    Some(ProcStat {
        start_ticks: field(22)?,
        vsize_bytes: field(23)?,
        rss_pages: field(24)?,
    })
}

/// PURE: the `btime` line of `/proc/stat` (boot time, Unix seconds).
pub(crate) fn boot_time(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix("btime "))
        .and_then(|v| v.trim().parse().ok())
}

/// One `ps -o rss=,vsz=,etime= -p <pid>` row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PsSelf {
    pub rss_bytes: u64,
    pub vsz_bytes: u64,
    /// Time since the process started.
    pub elapsed_seconds: u64,
}

/// PURE: `ps -o rss=,vsz=,etime=` (sizes in KiB; elapsed `[[DD-]HH:]MM:SS`).
pub(crate) fn parse_ps(text: &str) -> Option<PsSelf> {
    let mut it = text.split_whitespace();
    let rss: u64 = it.next()?.parse().ok()?;
    let vsz: u64 = it.next()?.parse().ok()?;
    let elapsed = crate::macos::parse::vitals::cpu_time(it.next()?)?;
    if elapsed < 0.0 {
        return None;
    }
    Some(PsSelf {
        rss_bytes: rss * 1024,
        vsz_bytes: vsz * 1024,
        elapsed_seconds: elapsed as u64,
    })
}

#[cfg(test)]
mod tests;
