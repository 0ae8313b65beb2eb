//! Which processes make up each VM, and their CPU time and resident memory.
//!
//! On macOS a VM lives in Virtualization.framework's XPC service process (one per VM, found
//! with `ps`, mapped to its Tart VM through the `disk.img` it holds open, `lsof`;
//! docs/reference/host-and-conventions.md §3.3); on Linux, where fake-tart stands in, a VM is its
//! `tart run <vm>` process and every process under it (the guest launcher and the job), read from
//! `/proc`. The summing over process trees ([`usage_by_vm`]) is pure.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use crate::macos::{parse::vitals as mac, shell};

/// A process as the samplers see it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Proc {
    pub pid: i32,
    pub ppid: i32,
    pub cpu_seconds: f64,
    pub rss_bytes: u64,
}

/// One VM's processes, summed.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct VmUsage {
    pub cpu_seconds_total: f64,
    pub rss_bytes: u64,
}

/// PURE: sums each root's process tree. `roots` maps a VM's root process to the VM's name.
pub(crate) fn usage_by_vm(
    procs: &[Proc],
    roots: &HashMap<i32, String>,
) -> BTreeMap<String, VmUsage> {
    let mut children: HashMap<i32, Vec<usize>> = HashMap::new();
    for (i, p) in procs.iter().enumerate() {
        children.entry(p.ppid).or_default().push(i);
    }
    let by_pid: HashMap<i32, usize> = procs.iter().enumerate().map(|(i, p)| (p.pid, i)).collect();
    let mut out = BTreeMap::new();
    for (root, vm) in roots {
        let Some(&start) = by_pid.get(root) else {
            continue;
        };
        let mut sum = VmUsage::default();
        let mut stack = vec![start];
        let mut seen = BTreeSet::new();
        while let Some(i) = stack.pop() {
            if !seen.insert(i) {
                continue;
            }
            let p = &procs[i];
            sum.cpu_seconds_total += p.cpu_seconds;
            sum.rss_bytes += p.rss_bytes;
            stack.extend(children.get(&p.pid).into_iter().flatten().copied());
        }
        let e: &mut VmUsage = out.entry(vm.clone()).or_default();
        e.cpu_seconds_total += sum.cpu_seconds_total;
        e.rss_bytes += sum.rss_bytes;
    }
    out
}

/// PURE: the VM a Linux process runs: `<tart> run <vm> --no-graphics …`.
pub(crate) fn tart_run_vm(argv: &[String]) -> Option<&str> {
    match argv {
        [_, run, vm, rest @ ..] if run == "run" && rest.iter().any(|a| a == "--no-graphics") => {
            Some(vm)
        }
        _ => None,
    }
}

/// Which VM each process roots, by pid, with the process's start time (a reused pid is a new
/// process): the argv is read once per process, not once per tick.
pub(crate) type Roots = HashMap<i32, (u64, Option<String>)>;

/// PURE: `/proc/<pid>/stat` -> (ppid, CPU ticks, rss in pages, start time). The CPU time includes the
/// process's exited children (`cutime`, `cstime`): short-lived processes of a VM count too.
/// The command name is in parentheses and may hold spaces, so fields are counted after the
/// last `)`.
pub(crate) fn proc_stat(text: &str) -> Option<(i32, u64, u64, u64)> {
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state(0) ppid(1) … utime(11) stime(12) cutime(13) cstime(14) …
    // starttime(19) … rss(21).
    let ppid = f.get(1)?.parse().ok()?;
    let mut ticks = 0u64;
    for i in 11..=14 {
        ticks += f.get(i)?.parse::<i64>().ok()?.max(0) as u64;
    }
    let start = f.get(19)?.parse().ok()?;
    let rss = f.get(21)?.parse().ok()?;
    Some((ppid, ticks, rss, start))
}

/// Linux: every process, and the roots of the VMs in `wanted`. `seen` caches each process's
/// root-ness across ticks.
pub(crate) fn linux_usage(
    wanted: &BTreeSet<String>,
    seen: &mut Roots,
) -> BTreeMap<String, VmUsage> {
    let ticks = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .unwrap_or(100) as f64;
    let page = nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE)
        .ok()
        .flatten()
        .unwrap_or(4096) as u64;
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return BTreeMap::new();
    };
    let mut procs = Vec::new();
    let mut roots = HashMap::new();
    let mut live = BTreeSet::new();
    for e in dir.filter_map(Result::ok) {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        let Some((ppid, t, rss, start)) = proc_stat(&stat) else {
            continue;
        };
        procs.push(Proc {
            pid,
            ppid,
            cpu_seconds: t as f64 / ticks,
            rss_bytes: rss * page,
        });
        live.insert(pid);
        let vm = match seen.get(&pid) {
            Some((s, vm)) if *s == start => vm.clone(),
            _ => {
                let vm = std::fs::read(e.path().join("cmdline"))
                    .ok()
                    .and_then(|cmd| {
                        let argv: Vec<String> = cmd
                            .split(|b| *b == 0)
                            .filter(|a| !a.is_empty())
                            .map(|a| String::from_utf8_lossy(a).into_owned())
                            .collect();
                        tart_run_vm(&argv).map(str::to_owned)
                    });
                seen.insert(pid, (start, vm.clone()));
                vm
            }
        };
        if let Some(vm) = vm.filter(|vm| wanted.contains(vm)) {
            roots.insert(pid, vm);
        }
    }
    seen.retain(|pid, _| live.contains(pid));
    usage_by_vm(&procs, &roots)
}

/// macOS: the XPC service processes of the VMs in `wanted`. `owners` caches pid -> VM, so
/// `lsof` runs once per new VM process.
pub(crate) fn mac_usage(
    wanted: &BTreeSet<String>,
    owners: &mut Roots,
    deadline: Duration,
) -> Result<BTreeMap<String, VmUsage>, shell::ShellError> {
    let out = shell::run(
        "/bin/ps",
        &["-axo", "pid=,ppid=,time=,rss=,comm="],
        deadline,
    )?;
    let rows = mac::ps_rows(&out);
    let live: BTreeSet<i32> = rows.iter().map(|r| r.pid).collect();
    owners.retain(|pid, _| live.contains(pid));
    let mut roots = HashMap::new();
    for r in rows
        .iter()
        .filter(|r| r.comm.ends_with(mac::VZ_XPC_SERVICE))
    {
        let vm = owners
            .entry(r.pid)
            .or_insert_with(|| {
                let pid = r.pid.to_string();
                let vm = shell::run("/usr/sbin/lsof", &["-Fn", "-p", &pid], deadline)
                    .ok()
                    .and_then(|t| mac::lsof_tart_vm(&t));
                (0, vm)
            })
            .1
            .clone();
        if let Some(vm) = vm.filter(|v| wanted.contains(v)) {
            roots.insert(r.pid, vm);
        }
    }
    let procs: Vec<Proc> = rows
        .iter()
        .map(|r| Proc {
            pid: r.pid,
            ppid: r.ppid,
            cpu_seconds: r.cpu_seconds,
            rss_bytes: r.rss_bytes,
        })
        .collect();
    Ok(usage_by_vm(&procs, &roots))
}

#[cfg(test)]
mod tests;
