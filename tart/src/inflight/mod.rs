//! In-flight records: one small file per running `tart` command, so that commands orphaned by
//! a dead agent can be ended by the next one.
//!
//! Every short-lived child runs in a process group of its own (docs/reference/tart-cli.md §7.1) —
//! the agent must be able to kill a hung command with all it started — so when the agent itself is
//! SIGKILLed (a crash, `launchctl kill`), its in-flight commands live on. A hung `pull` keeps the
//! host's pull lock and a hung `clone` the `$TART_HOME` lock (docs/reference/tart-cli.md §1.4):
//! every later pull or clone would wait behind them. So while a command runs, `<dir>/<pid>` holds
//! the owner's PID and the program; the file is removed when the command ends (or its future is
//! dropped). At start-up the agent calls [`reap`]: a record left by another owner whose process
//! still leads its group and runs the same program is SIGKILLed with its group.
//!
//! The check against PID reuse is `ps -o pgid=,command= -p <pid>` (same output on macOS and
//! Linux): the process must still lead its own group and run our tart program.

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use tracing::{debug, warn};

/// Removes its record when dropped.
#[derive(Debug)]
pub(crate) struct Record(PathBuf);

impl Drop for Record {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Record that `pid` (a group leader) runs `program` for this process. One write per command;
/// the directory is created only when it is missing. Best effort: a record that cannot be
/// written only means that command could not be reaped after a crash.
pub(crate) fn record(dir: &Path, pid: u32, program: &Path) -> Option<Record> {
    let path = dir.join(pid.to_string());
    let body = format!("{}\n{}\n", std::process::id(), program.display());
    let written = match std::fs::write(&path, &body) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir).and_then(|()| std::fs::write(&path, &body))
        }
        r => r,
    };
    if let Err(error) = written {
        warn!(%error, dir = %dir.display(), "cannot record an in-flight tart command");
        return None;
    }
    Some(Record(path))
}

/// SIGKILL the process groups of commands recorded in `dir` by an earlier owner that still
/// run `program`, and clear their records. Returns the PIDs killed.
pub async fn reap(dir: &Path, program: &Path) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return vec![];
    };
    let me = std::process::id();
    let mut killed = vec![];
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let owner = std::fs::read_to_string(&path)
            .ok()
            .and_then(|b| b.lines().next()?.parse::<u32>().ok());
        if owner == Some(me) {
            continue; // ours, still running
        }
        if let Some(ps) = ps_line(pid).await
            && leads_its_group_running(&ps, pid, program)
        {
            crate::signal::kill_group(pid);
            debug!(pid, "killed an orphaned tart command's group");
            killed.push(pid);
        }
        let _ = std::fs::remove_file(&path);
    }
    killed
}

/// `ps -o pgid=,command= -p <pid>`, or `None` when the process is gone.
async fn ps_line(pid: u32) -> Option<String> {
    let out = tokio::time::timeout(
        Duration::from_secs(5),
        tokio::process::Command::new("ps")
            .args(["-o", "pgid=,command=", "-p", &pid.to_string()])
            .kill_on_drop(true)
            .output(),
    )
    .await
    .ok()?
    .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Whether a `ps -o pgid=,command=` line shows `pid` leading its own group and running
/// `program` (as it was started: a path, or a bare name looked up on `PATH`).
pub(crate) fn leads_its_group_running(ps: &str, pid: u32, program: &Path) -> bool {
    let line = ps.trim();
    let Some((pgid, command)) = line.split_once(char::is_whitespace) else {
        return false;
    };
    let program = program.display().to_string();
    let command = command.trim_start();
    pgid.parse::<u32>() == Ok(pid)
        && (command == program || command.starts_with(&format!("{program} ")))
}

#[cfg(test)]
mod tests;
