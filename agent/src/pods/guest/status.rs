//! What the guest launcher reported in the `status` share when its command ended: the exit
//! code, the termination message, and the tail of the output for
//! `terminationMessagePolicy: FallbackToLogsOnError` (docs/guest.md, "The status share").
//! The files are small and local; reading them is synchronous. Parsing is pure.

use std::{
    fs::File,
    io::{self, Read, Seek, SeekFrom},
    path::Path,
};

use crate::pods::termination::{JobActivity, parse_job_mark};

/// Kubelet's bound on a termination message.
pub const MAX_MESSAGE_BYTES: usize = 4096;
/// Kubelet's bounds on the log tail used as a message (`FallbackToLogsOnError`).
pub const MAX_LOG_LINES: usize = 80;
/// See [`MAX_LOG_LINES`].
pub const MAX_LOG_BYTES: usize = 2048;

/// How the guest's command ended, as the status share says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GuestEnd {
    /// `exit_code`, when the launcher wrote one.
    pub exit_code: Option<i32>,
    /// `state` (`exited`, `failed`, `idle`, …), when present.
    pub state: Option<String>,
    /// The termination message: `termination-log`, else (when asked) the output's tail.
    pub message: Option<String>,
}

/// `exit_code`'s content: a decimal and a newline.
pub fn parse_exit_code(s: &str) -> Option<i32> {
    s.trim().parse().ok()
}

/// The last [`MAX_LOG_LINES`] lines of `text`, at most [`MAX_LOG_BYTES`] bytes (cut at a
/// line start where possible), as kubelet's fallback message.
pub fn log_tail(text: &str) -> String {
    let mut start = text.len().saturating_sub(MAX_LOG_BYTES);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    let tail = &text[start..];
    let lines: Vec<&str> = tail.lines().collect();
    let keep = &lines[lines.len().saturating_sub(MAX_LOG_LINES)..];
    let mut out = keep.join("\n");
    if tail.ends_with('\n') && !out.is_empty() {
        out.push('\n');
    }
    out
}

/// Read what the launcher left in `status`. `fallback_to_logs`: the Pod asked for
/// `FallbackToLogsOnError` (used only when the code is non-zero and there is no message).
pub fn read_end(status: &Path, fallback_to_logs: bool) -> GuestEnd {
    let exit_code = std::fs::read_to_string(status.join("exit_code"))
        .ok()
        .and_then(|s| parse_exit_code(&s));
    let state = std::fs::read_to_string(status.join("state"))
        .ok()
        .map(|s| s.trim().to_owned());
    let mut message = read_capped(&status.join("termination-log"), MAX_MESSAGE_BYTES)
        .ok()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .filter(|m| !m.is_empty());
    if message.is_none() && fallback_to_logs && exit_code.is_some_and(|c| c != 0) {
        // The two streams are kept apart; the error stream is the one a failure speaks on.
        let tail = ["stderr", "stdout"].into_iter().find_map(|f| {
            let b = read_last(&status.join(f), MAX_LOG_BYTES).ok()?;
            let t = log_tail(&String::from_utf8_lossy(&b));
            (!t.trim().is_empty()).then_some(t)
        });
        message = tail;
    }
    GuestEnd {
        exit_code,
        state,
        message,
    }
}

/// Remove what a previous run left (`exit_code`, `termination-log`), so a VM that dies before
/// its launcher starts is never credited with the last run's end.
pub fn clear_end(status: &Path) {
    for f in ["exit_code", "termination-log", JOB_FILE] {
        let _ = std::fs::remove_file(status.join(f));
    }
}

/// The file in the status share where the job marks itself `busy` or `idle`.
pub const JOB_FILE: &str = "job";

/// What the status share says about the job now: ended once the launcher reports its end
/// (`state` `exited` or `failed`), else its own mark; `None` when it says nothing readable,
/// so the last mark read stays in force.
pub fn read_job(status: &Path) -> Option<JobActivity> {
    let state = std::fs::read_to_string(status.join("state")).unwrap_or_default();
    if matches!(state.trim(), "exited" | "failed") {
        return Some(JobActivity::Ended);
    }
    let mark = std::fs::read_to_string(status.join(JOB_FILE)).ok()?;
    parse_job_mark(&mark)
}

fn read_capped(path: &Path, max: usize) -> io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    File::open(path)?
        .take(u64::try_from(max).unwrap_or(u64::MAX))
        .read_to_end(&mut buf)?;
    Ok(buf)
}

fn read_last(path: &Path, max: usize) -> io::Result<Vec<u8>> {
    let mut f = File::open(path)?;
    let len = f.metadata()?.len();
    let max = u64::try_from(max).unwrap_or(u64::MAX);
    f.seek(SeekFrom::Start(len.saturating_sub(max)))?;
    let mut buf = Vec::new();
    f.read_to_end(&mut buf)?;
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_parse_with_their_newline() {
        assert_eq!(parse_exit_code("3\n"), Some(3));
        assert_eq!(parse_exit_code("0"), Some(0));
        assert_eq!(parse_exit_code(""), None);
        assert_eq!(parse_exit_code("x\n"), None);
    }

    #[test]
    fn the_log_tail_keeps_the_last_80_lines_within_2_kib() {
        let many: String = (0..200).map(|i| format!("line {i}\n")).collect();
        let t = log_tail(&many);
        assert_eq!(t.lines().count(), 80);
        assert!(
            t.starts_with("line 120\n") && t.ends_with("line 199\n"),
            "{t}"
        );
        let long = "x".repeat(5000);
        assert_eq!(log_tail(&long).len(), MAX_LOG_BYTES);
        assert_eq!(log_tail(""), "");
    }

    #[test]
    fn the_end_is_read_with_the_message_or_the_error_tail() {
        let d = tempfile::tempdir().unwrap();
        let s = d.path();
        assert_eq!(read_end(s, true), GuestEnd::default());
        std::fs::write(s.join("exit_code"), "3\n").unwrap();
        std::fs::write(s.join("state"), "exited\n").unwrap();
        std::fs::write(s.join("stderr"), "warming up\nboom: disk full\n").unwrap();
        let e = read_end(s, false);
        assert_eq!((e.exit_code, e.state.as_deref()), (Some(3), Some("exited")));
        assert_eq!(e.message, None, "no fallback unless asked");
        let e = read_end(s, true);
        assert_eq!(e.message.as_deref(), Some("warming up\nboom: disk full\n"));
        std::fs::write(s.join("termination-log"), "y".repeat(6000)).unwrap();
        let e = read_end(s, true);
        assert_eq!(e.message.map(|m| m.len()), Some(MAX_MESSAGE_BYTES));
        clear_end(s);
        let e = read_end(s, false);
        assert_eq!((e.exit_code, e.message), (None, None));
    }

    #[test]
    fn the_job_mark_is_read_until_the_launcher_reports_the_end() {
        let d = tempfile::tempdir().unwrap();
        let s = d.path();
        assert_eq!(read_job(s), None, "nothing written yet");
        std::fs::write(s.join("state"), "running\n").unwrap();
        std::fs::write(s.join(JOB_FILE), "idle\n").unwrap();
        assert_eq!(read_job(s), Some(JobActivity::Idle));
        std::fs::write(s.join(JOB_FILE), "busy\n").unwrap();
        assert_eq!(read_job(s), Some(JobActivity::Busy));
        std::fs::write(s.join(JOB_FILE), "").unwrap();
        assert_eq!(read_job(s), None, "half-written: no news");
        std::fs::write(s.join(JOB_FILE), "busy\n").unwrap();
        std::fs::write(s.join("state"), "exited\n").unwrap();
        assert_eq!(read_job(s), Some(JobActivity::Ended));
        clear_end(s);
        assert!(
            !s.join(JOB_FILE).exists(),
            "a new run starts without a mark"
        );
    }
}
