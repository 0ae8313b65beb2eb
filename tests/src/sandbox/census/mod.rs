//! "Never two VMs for one Pod": samples, across every simulated Mac's `TART_HOME`, the VM
//! directories and the live `tart run` processes, keyed by the Pod UID in the VM name
//! (`tkl-<uid>`). Sampled on every workload tick; the keying and
//! the check are pure.
//!
//! A process the `tart run` of a VM has just forked (fake-tart's guest mode spawns the guest's
//! shells) shows, until it calls `exec`, the same command line and environment as its parent:
//! it is that run's child, not a second run, and is not counted (`vm_runs`).

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use super::{invariants::check, report::Invariant};

/// The agents' VM name prefix (the sandbox leaves it at its default).
const VM_PREFIX: &str = tart_kubelet::VM_NAME_PREFIX;

/// Where one VM of a Pod was seen: a directory or a `tart run` process, on a node.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Seen {
    /// `$TART_HOME/vms/<name>` on this node.
    Dir(String),
    /// A live `tart run <name>` process (pid) of this node's home.
    Run(String, u32),
}

/// The sampler's state.
#[derive(Debug, Default)]
pub struct Census {
    homes: Vec<(String, PathBuf)>,
    samples: u64,
    /// Pod UID -> what was seen the first time it had two VMs or two `tart run` processes.
    violations: BTreeMap<String, Vec<Seen>>,
}

impl Census {
    /// A sampler over these (node, `TART_HOME`) pairs.
    pub fn new(homes: Vec<(String, PathBuf)>) -> Self {
        Self {
            homes,
            ..Self::default()
        }
    }

    /// Takes one sample of every home.
    pub fn sample(&mut self) {
        let mut seen = Vec::new();
        for (node, home) in &self.homes {
            for vm in vm_dirs(home) {
                if let Some(uid) = pod_uid(&vm) {
                    seen.push((uid.to_owned(), Seen::Dir(node.clone())));
                }
            }
        }
        for (pid, home, vm) in vm_runs(tart_runs()) {
            let Some((node, _)) = self.homes.iter().find(|(_, h)| *h == home) else {
                continue;
            };
            if let Some(uid) = pod_uid(&vm) {
                seen.push((uid.to_owned(), Seen::Run(node.clone(), pid)));
            }
        }
        for (uid, places) in doubles(seen) {
            self.violations.entry(uid).or_insert(places);
        }
        self.samples += 1;
    }

    /// Samples taken so far.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// The `never_two_vms_for_one_pod` invariant over every sample so far.
    pub fn invariant(&self) -> Invariant {
        let detail = self
            .violations
            .iter()
            .map(|(uid, seen)| format!("pod {uid}: {seen:?}"))
            .collect::<Vec<_>>()
            .join("; ");
        check(
            "never_two_vms_for_one_pod",
            self.violations.is_empty() && self.samples > 0,
            if self.samples == 0 {
                "no sample was taken".into()
            } else {
                detail
            },
        )
    }
}

/// The Pod UID a VM name carries, if it is one of the agents' Pod VMs. A golden base VM's name
/// (`<prefix>golden-<29 hex>`) is as long on purpose, so the UID's shape (8-4-4-4-12, hyphens
/// at those places) is what tells them apart; every Mac keeps its own golden of a digest.
pub fn pod_uid(vm: &str) -> Option<&str> {
    vm.strip_prefix(VM_PREFIX).filter(|uid| {
        uid.len() == 36
            && uid.char_indices().all(|(i, c)| {
                if matches!(i, 8 | 13 | 18 | 23) {
                    c == '-'
                } else {
                    c.is_ascii_hexdigit()
                }
            })
    })
}

/// Pod UIDs seen with more than one VM directory or more than one `tart run` process.
pub fn doubles(seen: Vec<(String, Seen)>) -> BTreeMap<String, Vec<Seen>> {
    let mut by_uid: BTreeMap<String, Vec<Seen>> = BTreeMap::new();
    for (uid, s) in seen {
        by_uid.entry(uid).or_default().push(s);
    }
    by_uid.retain(|_, places| {
        let dirs = places.iter().filter(|s| matches!(s, Seen::Dir(_))).count();
        let runs = places.iter().filter(|s| matches!(s, Seen::Run(..))).count();
        dirs > 1 || runs > 1
    });
    for places in by_uid.values_mut() {
        places.sort();
    }
    by_uid
}

/// One `fake-tart run <vm>` process as read from `/proc`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunProc {
    /// Its PID.
    pub pid: u32,
    /// Its parent's PID.
    pub ppid: u32,
    /// Its `TART_HOME`.
    pub home: PathBuf,
    /// The VM it names.
    pub vm: String,
}

/// The processes that each run a VM: those whose parent is not itself one of them (a child
/// forked by a `tart run`, seen before its `exec`, still shows its parent's argv and
/// environment). As (pid, home, VM name).
pub fn vm_runs(procs: Vec<RunProc>) -> Vec<(u32, PathBuf, String)> {
    let pids: std::collections::BTreeSet<u32> = procs.iter().map(|p| p.pid).collect();
    procs
        .into_iter()
        .filter(|p| !pids.contains(&p.ppid))
        .map(|p| (p.pid, p.home, p.vm))
        .collect()
}

fn vm_dirs(home: &Path) -> Vec<String> {
    std::fs::read_dir(home.join("vms"))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Live processes whose command line is `fake-tart run <vm>`.
fn tart_runs() -> Vec<RunProc> {
    crate::cluster::live_pids()
        .into_iter()
        .filter_map(|pid| {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let argv: Vec<&[u8]> = cmd.split(|b| *b == 0).collect();
            let exe = String::from_utf8_lossy(argv.first()?);
            if !exe.ends_with("fake-tart") || argv.get(1) != Some(&&b"run"[..]) {
                return None;
            }
            let vm = String::from_utf8_lossy(argv.get(2)?).into_owned();
            let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
            let home = env
                .split(|b| *b == 0)
                .find_map(|kv| kv.strip_prefix(b"TART_HOME="))?;
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            Some(RunProc {
                pid,
                ppid: parent_pid(&stat)?,
                home: PathBuf::from(String::from_utf8_lossy(home).as_ref()),
                vm,
            })
        })
        .collect()
}

/// The parent PID in a `/proc/<pid>/stat` line (field 4).
pub fn parent_pid(stat: &str) -> Option<u32> {
    crate::proc_stat::number(stat, 4)
}

#[cfg(test)]
mod tests;
