//! Where the machine's CPU goes during the fleet's workload: the whole machine from
//! `/proc/stat`, and from `/proc/<pid>/stat` the control plane's processes, the agents (with
//! their reaped children: tart commands, the simulated VMs and their guests' jobs) and the
//! sandbox itself. Two samples make the shares; the parsers and the shares are pure.

use crate::sandbox::report::fleet::CpuShares;

/// The control plane's components, by their pid file's name (tests/cluster/start.sh).
pub const COMPONENTS: [&str; 4] = [
    "kube-apiserver",
    "etcd",
    "kube-scheduler",
    "kube-controller-manager",
];

/// CPU seconds so far.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sample {
    /// Seconds since some fixed point (for the window's length).
    pub at: f64,
    /// Ticks of every CPU: busy (all but idle and iowait) and in all.
    pub machine_busy_ticks: u64,
    pub machine_total_ticks: u64,
    /// Each of [`COMPONENTS`], seconds.
    pub components: [f64; 4],
    /// The agents' own time, summed.
    pub agents: f64,
    /// Their reaped children's time, summed.
    pub agents_children: f64,
    pub sandbox: f64,
    /// 1-minute load average.
    pub load: f64,
}

/// (busy, total) ticks from the `cpu` line of `/proc/stat`.
pub fn parse_proc_stat(text: &str) -> Option<(u64, u64)> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let f: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal (guest time is inside user).
    let total: u64 = f.iter().take(8).sum();
    let idle = f.get(3)? + f.get(4).unwrap_or(&0);
    Some((total - idle, total))
}

/// (utime + stime, cutime + cstime) in ticks from `/proc/<pid>/stat` text (fields 14–17).
pub fn parse_pid_stat(stat: &str) -> Option<(u64, u64)> {
    let n = |i| crate::proc_stat::number::<u64>(stat, i);
    Some((n(14)? + n(15)?, n(16)? + n(17)?))
}

/// The 1-minute load average from `/proc/loadavg`.
pub fn parse_loadavg(text: &str) -> Option<f64> {
    text.split_whitespace().next()?.parse().ok()
}

/// Clock ticks per second.
fn hz() -> f64 {
    nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .unwrap_or(100) as f64
}

/// (own, children) CPU seconds of a live process; zeros when it is gone.
pub fn pid_cpu(pid: u32) -> (f64, f64) {
    let hz = hz();
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| parse_pid_stat(&s))
        .map_or((0.0, 0.0), |(own, kids)| {
            (own as f64 / hz, kids as f64 / hz)
        })
}

/// Samples now: `components` are the control plane's pids (in [`COMPONENTS`]' order),
/// `agents` the agents' pids, `at` seconds since the run's start.
pub fn sample(at: f64, components: &[Option<u32>; 4], agents: &[u32]) -> Sample {
    let (busy, total) = std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|s| parse_proc_stat(&s))
        .unwrap_or((0, 0));
    let mut s = Sample {
        at,
        machine_busy_ticks: busy,
        machine_total_ticks: total,
        sandbox: pid_cpu(std::process::id()).0,
        load: std::fs::read_to_string("/proc/loadavg")
            .ok()
            .and_then(|t| parse_loadavg(&t))
            .unwrap_or(0.0),
        ..Sample::default()
    };
    for (i, pid) in components.iter().enumerate() {
        s.components[i] = pid.map_or(0.0, |p| pid_cpu(p).0);
    }
    for pid in agents {
        let (own, kids) = pid_cpu(*pid);
        s.agents += own;
        s.agents_children += kids;
    }
    s
}

/// The shares between two samples, percent of one core, on a machine of `cores`.
pub fn shares(a: &Sample, b: &Sample, cores: u32) -> CpuShares {
    let w = (b.at - a.at).max(1e-3);
    let pct = |x: f64, y: f64| (y - x).max(0.0) / w * 100.0;
    let total = b.machine_total_ticks.saturating_sub(a.machine_total_ticks) as f64;
    let busy = b.machine_busy_ticks.saturating_sub(a.machine_busy_ticks) as f64;
    let machine = if total > 0.0 {
        busy / total * f64::from(cores) * 100.0
    } else {
        0.0
    };
    let c: Vec<f64> = (0..4)
        .map(|i| pct(a.components[i], b.components[i]))
        .collect();
    let agents = pct(a.agents, b.agents);
    let agents_children = pct(a.agents_children, b.agents_children);
    let sandbox = pct(a.sandbox, b.sandbox);
    let known = c.iter().sum::<f64>() + agents + agents_children + sandbox;
    CpuShares {
        window_seconds: w,
        cores,
        load_average_start: a.load,
        load_average_end: b.load,
        machine_busy: machine,
        kube_apiserver: c[0],
        etcd: c[1],
        kube_scheduler: c[2],
        kube_controller_manager: c[3],
        agents,
        agents_children,
        sandbox,
        rest: (machine - known).max(0.0),
    }
}

#[cfg(test)]
mod tests;
