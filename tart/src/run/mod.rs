//! `tart run` processes: spawned detached (own session, `setsid`) so a VM outlives the agent,
//! output to a size-capped per-VM log file, an early-exit start window classified from the log,
//! exit watching, and re-attachment after an agent restart by the `config.json` fcntl lock
//! (docs/reference/tart-cli.md §1.4), never by `tart ip`. Each process is handed out as a
//! [`VmProcess`]; signalling it is the stop sequence's job.

use std::{
    ffi::OsString,
    fs::OpenOptions,
    io::{Read, Seek, SeekFrom, Write},
    os::unix::process::ExitStatusExt,
    path::{Path, PathBuf},
    process::{ExitStatus, Stdio},
    time::Duration,
};

use nix::fcntl::{FcntlArg, fcntl};
use tokio::{process::Command, sync::watch};
use tracing::{Instrument, debug, debug_span, info, warn};

use crate::{
    Error, ErrorKind, ExitInfo, ExitReason, Op, Result, RunOpts, VmName, process,
    running::VmProcess, signal,
};

/// How often an adopted process is checked for liveness.
const ADOPT_POLL: Duration = Duration::from_millis(200);
/// How often the log size is checked against its cap.
const LOG_CAP_POLL: Duration = Duration::from_secs(2);
/// Bytes of log read to classify an early exit or infer an adopted VM's end.
const LOG_TAIL: u64 = 64 * 1024;

/// Everything needed to start one `tart run`.
#[derive(Debug)]
pub(crate) struct Launch<'a> {
    /// The VM to run; it names the handle and the log lines.
    pub vm: &'a VmName,
    /// The `tart` program (or a stand-in).
    pub program: &'a Path,
    /// Argv after the program (from `command::run`).
    pub args: Vec<OsString>,
    /// Environment on top of the inherited one.
    pub env: &'a [(OsString, OsString)],
    /// Start from an empty environment (plus `PATH`).
    pub env_clear: bool,
    /// Log file, start window and log cap.
    pub opts: &'a RunOpts,
}

/// Spawn `tart run` detached and wait out the start window.
///
/// # Errors
/// `Spawn` when the program cannot start or the log cannot be opened; an early non-zero exit
/// classified from the log (VM limit, auxiliary storage, already running, not found...).
/// An exit with code 0 inside the window is not an error: the handle is returned already
/// ended.
pub(crate) async fn spawn(l: Launch<'_>) -> Result<VmProcess> {
    let opts = l.opts;
    let log = open_log(&opts.log_path).map_err(|e| Error::spawn(Op::Run, &opts.log_path, e))?;
    let offset = log.metadata().map(|m| m.len()).unwrap_or(0);
    let err_log = log
        .try_clone()
        .map_err(|e| Error::spawn(Op::Run, &opts.log_path, e))?;

    let mut cmd = process::command(l.program, &l.args, l.env, l.env_clear);
    cmd.stdout(Stdio::from(log))
        .stderr(Stdio::from(err_log))
        .kill_on_drop(false);
    detach(&mut cmd);
    let mut child = cmd
        .spawn()
        .map_err(|e| Error::spawn(Op::Run, l.program, e))?;
    let pid = child.id().unwrap_or_default();
    info!(vm = %l.vm, pid, "tart run started");

    let (tx, rx) = watch::channel(None);
    let span = debug_span!("tart_run", vm = %l.vm, pid);
    tokio::spawn(
        async move {
            let info = match child.wait().await {
                Ok(status) => exit_info(status),
                Err(e) => {
                    warn!(error = %e, "waiting for tart run failed");
                    ExitInfo::unknown()
                }
            };
            debug!(reason = ?info.reason, code = ?info.code, signal = ?info.signal, "tart run exited");
            let _ = tx.send(Some(info));
        }
        .instrument(span.clone()),
    );
    tokio::spawn(
        cap_log_loop(opts.log_path.clone(), opts.log_cap_bytes, rx.clone()).instrument(span),
    );

    let vm = VmProcess::new(l.vm.clone(), pid, false, rx);
    let Some(exit) = vm.wait_for(opts.start_window).await else {
        return Ok(vm);
    };
    if exit.code == Some(0) {
        return Ok(vm);
    }
    let tail = read_tail(&opts.log_path, Some(offset));
    let err = match exit.signal {
        Some(sig) => Error::new(
            Op::Run,
            ErrorKind::Other,
            None,
            format!("tart run killed by signal {sig} during start"),
        ),
        None => Error::from_exit(Op::Run, exit.code, &tail),
    };
    warn!(vm = %l.vm, kind = err.kind.as_str(), error = %err, "tart run exited during the start window");
    Err(err)
}

/// Make the child a session (and process group) leader so it survives the agent and launchd's
/// process-group kill (docs/reference/host-and-conventions.md §1.3) and can be killed as a group.
/// The signals of the stop sequence start at their default action in the child, whatever the
/// agent inherited: a process started in the background or under `nohup` inherits SIGINT or
/// SIGHUP ignored, and a program that does not set its own handler would keep ignoring them.
#[allow(unsafe_code)]
fn detach(cmd: &mut Command) {
    // SAFETY: the closure runs in the forked child before exec and only calls setsid(2) and
    // sigaction(2) (through `signal`), which are async-signal-safe; it allocates nothing and
    // touches no locks.
    unsafe {
        cmd.pre_exec(|| {
            use nix::sys::signal::{SigHandler, Signal, signal};
            for s in [
                Signal::SIGINT,
                Signal::SIGUSR2,
                Signal::SIGTERM,
                Signal::SIGHUP,
                Signal::SIGQUIT,
            ] {
                signal(s, SigHandler::SigDfl).map_err(std::io::Error::from)?;
            }
            nix::unistd::setsid()
                .map(drop)
                .map_err(std::io::Error::from)
        });
    }
}

/// PID of the `tart run` process holding `config.json`'s fcntl write lock, found with
/// `F_GETLK` on a read-only descriptor (docs/reference/tart-cli.md §1.4). Takes no lock. `Ok(None)`
/// when unlocked or when the file does not exist.
///
/// Never call this from the process that holds the lock: POSIX drops a process's locks when it
/// closes *any* descriptor of the file.
///
/// # Errors
/// I/O errors other than "not found".
pub fn lock_holder(config_json: &Path) -> std::io::Result<Option<u32>> {
    let file = match std::fs::File::open(config_json) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut fl = empty_flock();
    fl.l_type = libc::F_WRLCK as libc::c_short;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    fcntl(&file, FcntlArg::F_GETLK(&mut fl)).map_err(std::io::Error::from)?;
    if fl.l_type == libc::F_UNLCK as libc::c_short || fl.l_pid <= 0 {
        return Ok(None);
    }
    Ok(Some(fl.l_pid as u32))
}

/// A whole-file lock description (Linux and macOS have exactly these fields).
fn empty_flock() -> libc::flock {
    libc::flock {
        l_type: 0,
        l_whence: 0,
        l_start: 0,
        l_len: 0,
        l_pid: 0,
    }
}

/// Adopt a running `tart run` process found by [`lock_holder`]. Its end is noticed by polling
/// (`kill(pid, 0)` and the lock still held by that pid) and its outcome is inferred from the
/// log tail: `guest has stopped the virtual machine` or `Stopping VM...` mean a clean exit 0,
/// anything else is [`ExitReason::Unknown`].
pub(crate) fn adopt(vm: &VmName, pid: u32, config_json: PathBuf, opts: &RunOpts) -> VmProcess {
    let (tx, rx) = watch::channel(None);
    let (log_path, cap) = (opts.log_path.clone(), opts.log_cap_bytes);
    let span = debug_span!("tart_run", vm = %vm, pid, adopted = true);
    tokio::spawn(
        async move {
            let mut tick = tokio::time::interval(ADOPT_POLL);
            for n in 0u64.. {
                tokio::select! {
                    _ = tick.tick() => {}
                    () = tx.closed() => return, // every handle is gone: stop watching
                }
                let alive = signal::alive(pid)
                    && matches!(lock_holder(&config_json), Ok(Some(p)) if p == pid);
                if !alive {
                    let info = infer_exit(&read_tail(&log_path, None));
                    debug!(reason = ?info.reason, "adopted tart run is gone");
                    let _ = tx.send(Some(info));
                    return;
                }
                if n % 10 == 0 {
                    let _ = cap_log(&log_path, cap);
                }
            }
        }
        .instrument(span),
    );
    info!(vm = %vm, pid, "re-attached to running tart run");
    VmProcess::new(vm.clone(), pid, true, rx)
}

/// Infer how an adopted `tart run` ended from its log (docs/reference/tart-cli.md §2.6 exit paths).
pub(crate) fn infer_exit(log_tail: &str) -> ExitInfo {
    let clean = log_tail.lines().rev().take(50).any(|l| {
        l.contains("guest has stopped the virtual machine") || l.trim() == "Stopping VM..."
    });
    if clean {
        ExitInfo {
            reason: ExitReason::Completed,
            code: Some(0),
            signal: None,
        }
    } else {
        ExitInfo::unknown()
    }
}

/// [`ExitInfo`] of a reaped child.
pub(crate) fn exit_info(status: ExitStatus) -> ExitInfo {
    match (status.code(), status.signal()) {
        (Some(0), _) => ExitInfo {
            reason: ExitReason::Completed,
            code: Some(0),
            signal: None,
        },
        (Some(c), _) => ExitInfo {
            reason: ExitReason::Failed,
            code: Some(c),
            signal: None,
        },
        (None, sig) => ExitInfo {
            reason: ExitReason::Signaled,
            code: None,
            signal: sig,
        },
    }
}

fn open_log(path: &Path) -> std::io::Result<std::fs::File> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    OpenOptions::new().create(true).append(true).open(path)
}

/// The log from `from` (at most its last 64 KiB), lossily decoded. Empty on error.
pub fn read_tail(path: &Path, from: Option<u64>) -> String {
    let Ok(mut f) = std::fs::File::open(path) else {
        return String::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let mut start = len.saturating_sub(LOG_TAIL);
    if let Some(from) = from.filter(|f| *f <= len) {
        start = start.max(from);
    }
    let mut buf = Vec::new();
    if f.seek(SeekFrom::Start(start)).is_err() || f.read_to_end(&mut buf).is_err() {
        return String::new();
    }
    String::from_utf8_lossy(&buf).into_owned()
}

/// Keep the log under `cap` bytes: when it is larger, keep its last half. The writer uses
/// `O_APPEND`, so its next write lands at the new end.
pub(crate) fn cap_log(path: &Path, cap: u64) -> std::io::Result<bool> {
    let len = std::fs::metadata(path)?.len();
    if cap == 0 || len <= cap {
        return Ok(false);
    }
    let mut f = std::fs::File::open(path)?;
    f.seek(SeekFrom::Start(len - cap / 2))?;
    let mut tail = Vec::new();
    f.read_to_end(&mut tail)?;
    let w = OpenOptions::new().append(true).open(path)?;
    w.set_len(0)?;
    (&w).write_all(&tail)?;
    Ok(true)
}

async fn cap_log_loop(path: PathBuf, cap: u64, mut exit: watch::Receiver<Option<ExitInfo>>) {
    if cap == 0 {
        return;
    }
    loop {
        let p = path.clone();
        match tokio::task::spawn_blocking(move || cap_log(&p, cap)).await {
            Ok(Ok(true)) => debug!(cap, "vm log truncated to its last half"),
            Ok(Err(e)) if e.kind() != std::io::ErrorKind::NotFound => {
                warn!(error = %e, "capping vm log failed");
            }
            _ => {}
        }
        if exit.borrow().is_some() {
            return;
        }
        tokio::select! {
            () = tokio::time::sleep(LOG_CAP_POLL) => {}
            r = exit.changed() => if r.is_err() { return },
        }
    }
}

#[cfg(test)]
mod tests;
