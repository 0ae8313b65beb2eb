//! Running one short-lived `tart` child (docs/reference/tart-cli.md §7.1, §7.4): its own process
//! group, null stdin, stdout/stderr read concurrently as bytes (capped, tail kept, decoded
//! lossily), a per-call deadline and an optional stall watchdog that SIGKILL the whole group and
//! reap it.
//!
//! After the child exits the pipes are drained for at most 100 ms (`DRAIN`) and then dropped:
//! a grandchild that inherited them must never hold us up (docs/reference/tart-cli.md §2.6).
//! Long-lived `tart run` processes are spawned by the `run` module, which shares `command` with
//! this one. Classifying the result is the caller's job.

use std::{
    ffi::OsString,
    path::Path,
    process::{ExitStatus, Stdio},
    time::Duration,
};

use tokio::{
    io::AsyncReadExt,
    process::Command,
    time::{Instant, sleep_until, timeout},
};
use tracing::{debug, trace, warn};

use crate::{
    deadlines::SizeDeadline,
    inflight,
    parse::{PullLine, pull_line},
    signal::kill_group,
};

/// How long pipes are read after the child exited before they are dropped.
pub(crate) const DRAIN: Duration = Duration::from_millis(100);
/// Default cap of stored stdout and stderr bytes (each); the tail is kept.
pub(crate) const DEFAULT_OUTPUT_CAP: usize = 1 << 20;
/// Longest stdout line handed to the line callback; the rest of a longer line is dropped.
const MAX_LINE: usize = 64 * 1024;
/// How long a SIGKILLed group may take to be reaped before we stop waiting.
const REAP_WAIT: Duration = Duration::from_secs(10);

/// What to run and under which limits.
#[derive(Debug, Clone)]
pub struct Spec<'a> {
    /// The program (`tart` or `fake-tart`).
    pub program: &'a Path,
    /// Argv after the program name.
    pub args: &'a [OsString],
    /// Variables set on top of the inherited environment.
    pub env: &'a [(OsString, OsString)],
    /// Start from an empty environment (only `PATH` is carried over) instead of inheriting.
    pub env_clear: bool,
    /// Kill the group when the call takes longer than this.
    pub deadline: Duration,
    /// Kill the group when no stdout line arrived for this long, except while the last line
    /// was `waiting for lock...` (docs/reference/tart-cli.md §7.4).
    pub stall: Option<Duration>,
    /// A pull's size-aware deadline (docs/reference/tart-cli.md §7.4): once `pulling disk (N GB
    /// compressed)...` is printed, the call must end within `base + N × per_gb` of that line (never
    /// later than `deadline`).
    pub size_deadline: Option<SizeDeadline>,
    /// Stored bytes per stream.
    pub output_cap: usize,
    /// Record the child here while it runs ([`inflight`]), so that a later agent can end it if
    /// this one dies first.
    pub inflight: Option<&'a Path>,
}

/// Why the child was killed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Killed {
    /// The overall deadline passed.
    Deadline,
    /// The stall watchdog fired.
    Stall,
}

/// How the child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// It exited on its own.
    Exited(ExitStatus),
    /// We SIGKILLed its process group.
    Killed(Killed),
}

/// The result of one run.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Exited on its own, or killed by us and why.
    pub ended: Ended,
    /// stdout tail, lossily decoded.
    pub stdout: String,
    /// stderr tail, lossily decoded.
    pub stderr: String,
    /// PID the child had (also its process group id).
    pub pid: u32,
    /// Wall time from spawn until the pipes were drained.
    pub elapsed: Duration,
}

impl Outcome {
    /// Exit code, when it exited normally.
    pub fn code(&self) -> Option<i32> {
        match self.ended {
            Ended::Exited(s) => s.code(),
            Ended::Killed(_) => None,
        }
    }

    /// Exited with code 0.
    pub fn success(&self) -> bool {
        self.code() == Some(0)
    }
}

/// A `tart` command with null stdin: `args` after `program`, `env` on top of the inherited
/// environment, or on top of only `PATH` when `env_clear`.
pub(crate) fn command(
    program: &Path,
    args: &[OsString],
    env: &[(OsString, OsString)],
    env_clear: bool,
) -> Command {
    let mut cmd = Command::new(program);
    cmd.args(args).stdin(Stdio::null());
    if env_clear {
        cmd.env_clear();
        if let Some(path) = std::env::var_os("PATH") {
            cmd.env("PATH", path);
        }
    }
    cmd.envs(env.iter().map(|(k, v)| (k, v)));
    cmd
}

/// Run `spec` to completion, calling `on_line` for every complete stdout line.
///
/// # Errors
/// The spawn error (program missing, not executable).
///
/// # Cancellation
/// Dropping the future SIGKILLs the child's process group.
pub async fn run(
    spec: &Spec<'_>,
    on_line: &mut (dyn FnMut(&str) + Send),
) -> std::io::Result<Outcome> {
    let mut cmd = command(spec.program, spec.args, spec.env, spec.env_clear);
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);

    let start = Instant::now();
    let mut child = cmd.spawn()?;
    let pid = child.id().unwrap_or_default();
    let mut group = GroupGuard(Some(pid));
    // Declared after the guard, so dropped first: the record goes, then the group is killed.
    let _record = spec
        .inflight
        .and_then(|dir| inflight::record(dir, pid, spec.program));
    debug!(pid, program = %spec.program.display(), "tart child started");

    let mut out = Stream::new(child.stdout.take(), spec.output_cap);
    let mut err = Stream::new(child.stderr.take(), spec.output_cap);
    let mut out_buf = vec![0u8; 8192];
    let mut err_buf = vec![0u8; 8192];
    let mut lines = LineSplitter::default();
    let mut deadline = start + spec.deadline;
    let mut last_line = start;
    let mut waiting_for_lock = false;

    let ended = loop {
        let stall_at = spec.stall.map(|s| last_line + s);
        tokio::select! {
            r = read(&mut out.pipe, &mut out_buf), if out.pipe.is_some() => match r {
                Some(chunk) => {
                    out.tail.push(chunk);
                    for line in lines.push(chunk) {
                        trace!(pid, line = %line, "stdout");
                        last_line = Instant::now();
                        let kind = pull_line(&line);
                        waiting_for_lock = kind == PullLine::WaitingForLock;
                        if let (Some(sd), PullLine::Disk { compressed_gb: Some(gb) }) =
                            (spec.size_deadline, &kind)
                        {
                            deadline = deadline.min(sd.at(last_line, *gb));
                        }
                        on_line(&line);
                    }
                }
                None => out.pipe = None,
            },
            r = read(&mut err.pipe, &mut err_buf), if err.pipe.is_some() => match r {
                Some(chunk) => {
                    trace!(pid, bytes = chunk.len(), "stderr");
                    err.tail.push(chunk);
                }
                None => err.pipe = None,
            },
            status = child.wait() => break Ended::Exited(status?),
            () = sleep_until(deadline) => break Ended::Killed(Killed::Deadline),
            () = sleep_until(stall_at.unwrap_or(deadline)),
                if stall_at.is_some() && !waiting_for_lock => break Ended::Killed(Killed::Stall),
        }
    };

    // Kill the group in both cases: on a kill the child first (the leader is not reaped yet,
    // so its pgid cannot be reused); after a normal exit, stragglers that inherited the group.
    group.kill();
    if let Ended::Killed(why) = ended {
        match timeout(REAP_WAIT, child.wait()).await {
            Ok(_) => {}
            Err(_) => warn!(pid, "killed tart child not reaped in time"),
        }
        debug!(pid, ?why, "tart child killed");
    }
    group.disarm();

    let _ = timeout(DRAIN, async {
        while out.pipe.is_some() || err.pipe.is_some() {
            tokio::select! {
                r = read(&mut out.pipe, &mut out_buf), if out.pipe.is_some() => match r {
                    Some(chunk) => {
                        out.tail.push(chunk);
                        for line in lines.push(chunk) {
                            on_line(&line);
                        }
                    }
                    None => out.pipe = None,
                },
                r = read(&mut err.pipe, &mut err_buf), if err.pipe.is_some() => match r {
                    Some(chunk) => err.tail.push(chunk),
                    None => err.pipe = None,
                },
            }
        }
    })
    .await;
    if let Some(rest) = lines.finish() {
        on_line(&rest);
    }
    drop((out.pipe.take(), err.pipe.take()));

    Ok(Outcome {
        ended,
        stdout: out.tail.lossy(),
        stderr: err.tail.lossy(),
        pid,
        elapsed: start.elapsed(),
    })
}

/// One read; `None` on EOF or error (a broken pipe ends the stream, it is not an error here).
async fn read<'b, R: AsyncReadExt + Unpin>(
    pipe: &mut Option<R>,
    buf: &'b mut [u8],
) -> Option<&'b [u8]> {
    let p = pipe.as_mut()?;
    match p.read(buf).await {
        Ok(0) | Err(_) => None,
        Ok(n) => Some(&buf[..n]),
    }
}

struct Stream<R> {
    pipe: Option<R>,
    tail: TailBuf,
}

impl<R> Stream<R> {
    fn new(pipe: Option<R>, cap: usize) -> Self {
        Self {
            pipe,
            tail: TailBuf::new(cap),
        }
    }
}

// === impl GroupGuard ===

/// SIGKILLs a process group when dropped while armed (cancellation of [`run`]).
struct GroupGuard(Option<u32>);

impl GroupGuard {
    fn kill(&self) {
        if let Some(pid) = self.0 {
            kill_group(pid);
        }
    }

    fn disarm(&mut self) {
        self.0 = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

// === impl TailBuf ===

/// Keeps the last `cap` bytes written to it.
#[derive(Debug)]
pub(crate) struct TailBuf {
    buf: Vec<u8>,
    cap: usize,
}

impl TailBuf {
    /// An empty buffer keeping at most `cap` bytes.
    pub(crate) fn new(cap: usize) -> Self {
        Self {
            buf: Vec::new(),
            cap,
        }
    }

    /// Append, discarding the oldest bytes past the cap.
    pub(crate) fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
        if self.buf.len() > self.cap {
            let excess = self.buf.len() - self.cap;
            self.buf.drain(..excess);
        }
    }

    /// The kept bytes, decoded lossily (invalid UTF-8 becomes U+FFFD).
    pub(crate) fn lossy(&self) -> String {
        String::from_utf8_lossy(&self.buf).into_owned()
    }
}

// === impl LineSplitter ===

/// Splits a byte stream into lossily decoded lines (without `\n`, `\r` trimmed).
#[derive(Debug, Default)]
pub(crate) struct LineSplitter {
    pending: Vec<u8>,
}

impl LineSplitter {
    /// Feed bytes; returns the lines they completed.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        let mut lines = Vec::new();
        for part in bytes.split_inclusive(|b| *b == b'\n') {
            let room = MAX_LINE.saturating_sub(self.pending.len());
            let body = part.strip_suffix(b"\n").unwrap_or(part);
            self.pending
                .extend_from_slice(&body[..body.len().min(room)]);
            if part.ends_with(b"\n") {
                lines.push(self.take());
            }
        }
        lines
    }

    /// The unterminated last line, if any.
    pub(crate) fn finish(&mut self) -> Option<String> {
        (!self.pending.is_empty()).then(|| self.take())
    }

    fn take(&mut self) -> String {
        let bytes = std::mem::take(&mut self.pending);
        let s = String::from_utf8_lossy(&bytes);
        s.trim_end_matches('\r').to_owned()
    }
}

#[cfg(test)]
mod tests;
