//! A streaming `tart exec [-i] [-t] <vm> <argv...>` (docs/reference/tart-cli.md §2.10): the child's
//! stdin, stdout and stderr are handed to the caller as async pipes (or, with a TTY, one
//! pseudo-terminal whose window size the caller sets), and its exit code comes back when it ends.
//!
//! The child runs in its own process group (with a TTY: its own session, the terminal as its
//! controlling terminal), and that group is SIGKILLed when the session is killed or dropped,
//! so a client that goes away never leaves a `tart exec` behind. There is no deadline on the
//! command itself — an interactive shell may last hours; the caller bounds the session (the
//! kubelet API's idle timeout). Building the argv is `command.rs`'s job.

use std::{
    ffi::OsString,
    fmt,
    future::Future,
    os::fd::{AsRawFd, OwnedFd},
    path::Path,
    pin::Pin,
    process::{ExitStatus, Stdio},
};

use tokio::io::{AsyncRead, AsyncWrite};
use tracing::debug;

use crate::{inflight, process, signal::kill_group};

/// A terminal size in character cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowSize {
    /// Columns.
    pub cols: u16,
    /// Rows.
    pub rows: u16,
}

/// How to run a streaming exec.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExecOpts {
    /// `-i`: the caller writes the command's stdin (otherwise it reads `/dev/null`).
    pub stdin: bool,
    /// `-t` with a pseudo-terminal of this initial size; stdout and stderr are then one stream.
    pub tty: Option<WindowSize>,
}

/// The command's input, as the caller writes it.
pub type ExecWriter = Box<dyn AsyncWrite + Send + Unpin>;
/// The command's output, as the caller reads it.
pub type ExecReader = Box<dyn AsyncRead + Send + Unpin>;
/// Resolves to the exit code when the command ends.
pub type ExecWait = Pin<Box<dyn Future<Output = std::io::Result<i32>> + Send>>;

/// What a session can be asked to do besides waiting: implemented over a real child and by
/// in-memory fakes.
pub trait ExecControl: Send + Sync {
    /// End the command now (idempotent).
    fn kill(&self);
    /// Set the terminal size (no-op without a TTY).
    fn resize(&self, size: WindowSize);
}

/// A running exec. Dropping it kills the command.
pub struct ExecSession {
    /// The command's stdin (with [`ExecOpts::stdin`]); dropping it is EOF.
    pub stdin: Option<ExecWriter>,
    /// The command's stdout (with a TTY: the terminal's output).
    pub stdout: Option<ExecReader>,
    /// The command's stderr (`None` with a TTY).
    pub stderr: Option<ExecReader>,
    wait: Option<ExecWait>,
    control: Box<dyn ExecControl>,
}

impl fmt::Debug for ExecSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExecSession").finish_non_exhaustive()
    }
}

impl ExecSession {
    /// A session from its parts (for implementations of the `Tart` trait other than
    /// the CLI's, such as in-memory fakes).
    pub fn from_parts(
        stdin: Option<ExecWriter>,
        stdout: Option<ExecReader>,
        stderr: Option<ExecReader>,
        wait: ExecWait,
        control: Box<dyn ExecControl>,
    ) -> Self {
        Self {
            stdin,
            stdout,
            stderr,
            wait: Some(wait),
            control,
        }
    }

    /// Takes the exit-code future (once); await it while the pipes are pumped.
    pub fn take_wait(&mut self) -> Option<ExecWait> {
        self.wait.take()
    }

    /// End the command now.
    pub fn kill(&self) {
        self.control.kill();
    }

    /// Set the terminal size (no-op without a TTY).
    pub fn resize(&self, size: WindowSize) {
        self.control.resize(size);
    }
}

impl Drop for ExecSession {
    fn drop(&mut self) {
        self.control.kill();
    }
}

/// The exit code `tart exec` reports: its own code, or 128 + the signal that killed it (the
/// shell's convention, so a killed command is never mistaken for success).
pub(crate) fn exit_code(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(255)
}

// === impl ChildControl ===

/// Kills the child's group; resizes its terminal.
struct ChildControl {
    pgid: u32,
    pty: Option<OwnedFd>,
    _record: Option<inflight::Record>,
}

impl ExecControl for ChildControl {
    fn kill(&self) {
        kill_group(self.pgid);
    }

    fn resize(&self, size: WindowSize) {
        if let Some(fd) = &self.pty {
            set_window_size(fd, size);
        }
    }
}

/// What [`spawn`] runs.
pub(crate) struct Spawn<'a> {
    pub program: &'a Path,
    pub args: &'a [OsString],
    pub env: &'a [(OsString, OsString)],
    pub env_clear: bool,
    pub inflight: Option<&'a Path>,
}

/// Starts the child with pipes (or a pseudo-terminal) as `opts` asks.
///
/// # Errors
/// The spawn error (program missing, not executable) or a failed `openpty`.
pub(crate) fn spawn(s: &Spawn<'_>, opts: ExecOpts) -> std::io::Result<ExecSession> {
    let mut cmd = process::command(s.program, s.args, s.env, s.env_clear);
    cmd.kill_on_drop(true);
    let mut pty_master = None;
    match opts.tty {
        None => {
            cmd.stdin(if opts.stdin {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        }
        Some(size) => {
            let pty = nix::pty::openpty(Some(&winsize(size)), None)?;
            let slave = std::fs::File::from(pty.slave);
            let input = if opts.stdin {
                Stdio::from(slave.try_clone()?)
            } else {
                Stdio::null()
            };
            cmd.stdin(input)
                .stdout(Stdio::from(slave.try_clone()?))
                .stderr(Stdio::from(slave));
            controlling_terminal(&mut cmd);
            pty_master = Some(pty.master);
        }
    }
    let mut child = cmd.spawn()?;
    let pid = child.id().unwrap_or_default();
    let record = s
        .inflight
        .and_then(|dir| inflight::record(dir, pid, s.program));
    debug!(pid, tty = opts.tty.is_some(), "tart exec started");
    let (stdin, stdout, stderr, control_fd): (Option<ExecWriter>, _, _, _) = match pty_master {
        None => (
            child.stdin.take().map(|w| Box::new(w) as ExecWriter),
            child.stdout.take().map(|r| Box::new(r) as ExecReader),
            child.stderr.take().map(|r| Box::new(r) as ExecReader),
            None,
        ),
        Some(master) => {
            let control = master.try_clone()?;
            let file = std::fs::File::from(master);
            let writer = file.try_clone()?;
            let stdin = opts
                .stdin
                .then(|| Box::new(tokio::fs::File::from_std(writer)) as ExecWriter);
            let stdout = Box::new(tokio::fs::File::from_std(file)) as ExecReader;
            (stdin, Some(stdout), None, Some(control))
        }
    };
    let wait: ExecWait = Box::pin(async move {
        let status = child.wait().await?;
        Ok(exit_code(status))
    });
    Ok(ExecSession::from_parts(
        stdin,
        stdout,
        stderr,
        wait,
        Box::new(ChildControl {
            pgid: pid,
            pty: control_fd,
            _record: record,
        }),
    ))
}

fn winsize(size: WindowSize) -> nix::pty::Winsize {
    nix::pty::Winsize {
        ws_row: size.rows,
        ws_col: size.cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    }
}

/// `TIOCSWINSZ` on the terminal: the kernel then sends SIGWINCH to its foreground group,
/// which is how `tart exec -t` learns of a resize (docs/reference/tart-cli.md §2.10).
#[allow(unsafe_code)]
fn set_window_size(fd: &OwnedFd, size: WindowSize) {
    let ws = winsize(size);
    // SAFETY: `fd` is an open descriptor we own and `ws` is a valid `winsize` for the call's
    // duration; TIOCSWINSZ only reads it.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), libc::TIOCSWINSZ, &ws) };
    if rc != 0 {
        debug!(error = %std::io::Error::last_os_error(), "terminal resize failed");
    }
}

/// The child starts a session (so its group can be killed as one, like the pipe case's
/// process group) and takes the pseudo-terminal on its stdout as its controlling terminal.
#[allow(unsafe_code)]
fn controlling_terminal(cmd: &mut tokio::process::Command) {
    // SAFETY: the closure runs in the forked child before exec and only calls setsid(2) and
    // ioctl(2), which are async-signal-safe; it allocates nothing and touches no locks.
    unsafe {
        cmd.pre_exec(|| {
            nix::unistd::setsid().map_err(std::io::Error::from)?;
            if libc::ioctl(1, libc::TIOCSCTTY as _, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests;
