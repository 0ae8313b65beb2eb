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
mod tests {
    use super::*;

    #[test]
    fn only_a_group_leader_running_our_program_is_ours() {
        let tart = Path::new("/opt/homebrew/bin/tart");
        let ours = "  4242 /opt/homebrew/bin/tart clone ghcr.io/x:1 tkl-abc\n";
        assert!(leads_its_group_running(ours, 4242, tart));
        // The PID was reused by something else, or by a tart that is not a group leader.
        assert!(!leads_its_group_running(
            "4242 /usr/bin/vim notes",
            4242,
            tart
        ));
        assert!(!leads_its_group_running(
            "100 /opt/homebrew/bin/tart list",
            4242,
            tart
        ));
        // A longer path that merely starts with ours.
        assert!(!leads_its_group_running(
            "4242 /opt/homebrew/bin/tart-other x",
            4242,
            tart
        ));
        // A bare program name, as found on PATH.
        assert!(leads_its_group_running(
            "4242 tart pull ghcr.io/x:1",
            4242,
            Path::new("tart")
        ));
        assert!(!leads_its_group_running("", 4242, tart));
    }

    #[tokio::test]
    async fn records_of_this_process_are_never_reaped_and_gone_ones_are_cleared() {
        let tmp = tempfile::tempdir().unwrap();
        // Not there yet: the first record creates it.
        let dir = tmp.path().join("inflight");
        let me = std::process::id();
        let rec = record(&dir, me, Path::new("/bin/sh")).unwrap();
        // A record of a process that no longer exists, left by another owner.
        std::fs::write(dir.join("999999999"), "1\n/bin/sh\n").unwrap();
        assert!(reap(&dir, Path::new("/bin/sh")).await.is_empty());
        assert!(
            dir.join(me.to_string()).exists(),
            "our own record was reaped"
        );
        assert!(!dir.join("999999999").exists(), "a dead record was kept");
        drop(rec);
        assert!(
            !dir.join(me.to_string()).exists(),
            "record outlived its command"
        );
    }
}
