//! MemTart's streaming exec: the scripted [`ExecOutput`] played back as pipes — stdout and
//! stderr (merged with a TTY, as a terminal merges them), stdin swallowed, and the scripted
//! exit code once the output has been read or at once.

use std::io::Cursor;

use crate::{ExecControl, ExecOpts, ExecOutput, ExecReader, ExecSession, ExecWriter, WindowSize};

/// Nothing to kill or resize: the output is already there.
struct Scripted;

impl ExecControl for Scripted {
    fn kill(&self) {}
    fn resize(&self, _size: WindowSize) {}
}

/// A session that plays `out` back.
pub(super) fn session(out: ExecOutput, opts: ExecOpts) -> ExecSession {
    let reader = |s: String| Box::new(Cursor::new(s.into_bytes())) as ExecReader;
    let (stdout, stderr) = match opts.tty {
        Some(_) => (reader(out.stdout + &out.stderr), None),
        None => (reader(out.stdout), Some(reader(out.stderr))),
    };
    let stdin = opts
        .stdin
        .then(|| Box::new(tokio::io::sink()) as ExecWriter);
    let code = out.exit_code;
    ExecSession::from_parts(
        stdin,
        Some(stdout),
        stderr,
        Box::pin(async move { Ok(code) }),
        Box::new(Scripted),
    )
}
