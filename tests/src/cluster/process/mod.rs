//! Processes: running the control-plane scripts with a deadline, and finding processes in
//! `/proc` — those of a control-plane run (what must be empty after `stop.sh`), or any that
//! still mention a directory.
use std::{
    path::{Path, PathBuf},
    process::Command,
    time::Duration,
};

use anyhow::{Context as _, bail};

use super::COMPONENTS;

/// The PIDs and command lines of live (non-zombie) etcd/kube-* processes whose command line
/// mentions `run_dir`: what must be empty after `stop.sh`.
pub fn processes_of_run(run_dir: &Path) -> Vec<(u32, String)> {
    let needle = format!("{}/", run_dir.display());
    let mut found = Vec::new();
    for pid in live_pids() {
        let Ok(raw) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let argv: Vec<String> = raw
            .split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        let exe = argv.first().map(|a| a.rsplit('/').next().unwrap_or(a));
        let ours = exe.is_some_and(|e| COMPONENTS.contains(&e));
        let cmdline = argv.join(" ");
        if ours && cmdline.contains(&needle) {
            found.push((pid, cmdline));
        }
    }
    found
}

/// Live processes other than this one whose command line or environment mentions `dir`,
/// with their command lines: what a run confined to `dir` (its `TMPDIR`, say) left behind.
pub fn processes_mentioning(dir: &Path) -> Vec<(u32, String)> {
    let needle = dir.display().to_string().into_bytes();
    let has = |b: &[u8]| b.windows(needle.len()).any(|w| w == needle.as_slice());
    let me = std::process::id();
    live_pids()
        .into_iter()
        .filter(|pid| *pid != me)
        .filter_map(|pid| {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            (has(&cmd) || has(&env))
                .then(|| (pid, String::from_utf8_lossy(&cmd).replace('\0', " ")))
        })
        .collect()
}

/// PIDs of the processes in `/proc` that are not zombies (Linux).
pub fn live_pids() -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| !is_zombie(PathBuf::from(format!("/proc/{pid}/stat"))))
        .collect()
}

fn is_zombie(stat: PathBuf) -> bool {
    let text = std::fs::read_to_string(stat).unwrap_or_default();
    crate::proc_stat::field(&text, 3).is_none_or(|state| state == "Z")
}

/// Runs a script to completion with a deadline (the script's process group is killed when it
/// passes) and returns its stdout; stderr goes into the error on failure.
pub(super) fn run_script(
    script: &Path,
    args: &[&str],
    deadline: Duration,
) -> anyhow::Result<String> {
    use std::os::unix::process::CommandExt as _;
    let out_file = tempfile::NamedTempFile::new()?;
    let err_file = tempfile::NamedTempFile::new()?;
    let mut child = Command::new(script)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(out_file.reopen()?)
        .stderr(err_file.reopen()?)
        .process_group(0)
        .spawn()
        .with_context(|| format!("spawning {}", script.display()))?;
    // std has no wait-with-timeout: a thread waits, this one waits on the channel.
    let pgid = nix::unistd::Pid::from_raw(i32::try_from(child.id())?);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    let status = match rx.recv_timeout(deadline) {
        Ok(status) => status?,
        Err(_) => {
            let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
            let _ = rx.recv();
            bail!("{} {args:?}: no exit after {deadline:?}", script.display());
        }
    };
    let stdout = std::fs::read_to_string(out_file.path())?;
    if !status.success() {
        let stderr = std::fs::read_to_string(err_file.path())?;
        bail!("{} {args:?} failed ({status}):\n{stderr}", script.display());
    }
    Ok(stdout)
}

#[cfg(test)]
mod tests;
