//! Run one macOS tool with a deadline, synchronously (host facts are gathered on a blocking
//! thread). argv only, never a shell; on timeout the child is killed.
use std::io::Read as _;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// Why a command produced no usable output.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ShellError {
    /// The program could not be started (absent on this system, permissions).
    #[error("cannot start {program}")]
    Spawn {
        /// argv[0].
        program: String,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// It ran past its deadline and was killed.
    #[error("{program} timed out after {deadline:?}")]
    Timeout {
        /// argv[0].
        program: String,
        deadline: Duration,
    },
    /// It exited unsuccessfully.
    #[error("{program} exited with {code:?}: {stderr}")]
    Failed {
        /// argv[0].
        program: String,
        /// Exit code (`None` = killed by a signal).
        code: Option<i32>,
        /// First line of stderr.
        stderr: String,
    },
}

/// Runs `program args..` and returns its stdout (lossy UTF-8) if it exits 0 within `deadline`.
///
/// # Errors
/// [`ShellError`]: not startable, timed out (the child is killed), or non-zero exit.
pub(crate) fn run(program: &str, args: &[&str], deadline: Duration) -> Result<String, ShellError> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| ShellError::Spawn {
            program: program.to_string(),
            source,
        })?;
    let pid = child.id();
    let mut out = child.stdout.take().expect("piped stdout");
    let mut err = child.stderr.take().expect("piped stderr");
    let (tx, rx) = mpsc::channel();
    // The reader thread owns the pipes and the wait; the caller only waits on the channel.
    std::thread::spawn(move || {
        let mut o = Vec::new();
        let mut e = Vec::new();
        let _ = out.read_to_end(&mut o);
        let _ = err.read_to_end(&mut e);
        let status = child.wait();
        let _ = tx.send((o, e, status));
    });
    match rx.recv_timeout(deadline) {
        Ok((o, e, status)) => {
            let status = status.map_err(|source| ShellError::Spawn {
                program: program.to_string(),
                source,
            })?;
            if status.success() {
                Ok(String::from_utf8_lossy(&o).into_owned())
            } else {
                Err(ShellError::Failed {
                    program: program.to_string(),
                    code: status.code(),
                    stderr: String::from_utf8_lossy(&e)
                        .lines()
                        .next()
                        .unwrap_or_default()
                        .to_string(),
                })
            }
        }
        Err(_) => {
            if let Ok(pid) = i32::try_from(pid) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            Err(ShellError::Timeout {
                program: program.to_string(),
                deadline,
            })
        }
    }
}

#[cfg(test)]
mod tests;
