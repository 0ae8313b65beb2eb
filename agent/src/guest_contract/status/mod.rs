//! What the guest launcher reported in the `status` share when its command ended: the exit
//! code, the termination message, and the tail of the output for
//! `terminationMessagePolicy: FallbackToLogsOnError` (docs/guest.md, "The status share").
//! The files are small and local; reading them is synchronous. Parsing is pure. The guest
//! writes them: every read goes through [`crate::guest_file`] (no link followed, nothing but
//! a regular file, bounded), and what it refuses is reported in [`GuestEnd::refused`].

use std::path::Path;

use super::job::{JobActivity, parse_job_mark};
use crate::guest_file::{self, GuestFileError, Refused};

/// The most read of `exit_code`, `state` and `job`: a word or a number and a newline.
const SMALL_FILE_BYTES: u64 = 64;

/// Kubelet's bound on a termination message.
pub(crate) const MAX_MESSAGE_BYTES: usize = 4096;
/// Kubelet's bounds on the log tail used as a message (`FallbackToLogsOnError`).
pub(crate) const MAX_LOG_LINES: usize = 80;
/// See [`MAX_LOG_LINES`].
pub(crate) const MAX_LOG_BYTES: usize = 2048;

/// How the guest's command ended, as the status share says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct GuestEnd {
    /// `exit_code`, when the launcher wrote one.
    pub exit_code: Option<i32>,
    /// `state` (`exited`, `failed`, `idle`, …), when present.
    pub state: Option<String>,
    /// The termination message: `termination-log`, else (when asked) the output's tail.
    pub message: Option<String>,
    /// Files that were something other than a regular file, and what they were; read as
    /// absent.
    pub refused: Vec<(&'static str, Refused)>,
}

/// `exit_code`'s content: a decimal and a newline.
pub(crate) fn parse_exit_code(s: &str) -> Option<i32> {
    s.trim().parse().ok()
}

/// The last [`MAX_LOG_LINES`] lines of `text`, at most [`MAX_LOG_BYTES`] bytes (cut at a
/// line start where possible), as kubelet's fallback message.
pub(crate) fn log_tail(text: &str) -> String {
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
pub(crate) fn read_end(status: &Path, fallback_to_logs: bool) -> GuestEnd {
    let mut refused = Vec::new();
    let mut read = |name: &'static str, last: bool, max: usize| {
        let path = status.join(name);
        let max = u64::try_from(max).unwrap_or(u64::MAX);
        let got = if last {
            guest_file::read_last(&path, max).map(|(b, _)| b)
        } else {
            guest_file::read_head(&path, max)
        };
        match got {
            Ok(b) => Some(String::from_utf8_lossy(&b).into_owned()),
            Err(GuestFileError::Refused(kind)) => {
                refused.push((name, kind));
                None
            }
            Err(_) => None,
        }
    };
    let small = SMALL_FILE_BYTES as usize;
    let exit_code = read("exit_code", false, small).and_then(|s| parse_exit_code(&s));
    let state = read("state", false, small).map(|s| s.trim().to_owned());
    let mut message = read("termination-log", false, MAX_MESSAGE_BYTES).filter(|m| !m.is_empty());
    if message.is_none() && fallback_to_logs && exit_code.is_some_and(|c| c != 0) {
        // The two streams are kept apart; the error stream is the one a failure speaks on.
        let tail = ["stderr", "stdout"].into_iter().find_map(|f| {
            let t = log_tail(&read(f, true, MAX_LOG_BYTES)?);
            (!t.trim().is_empty()).then_some(t)
        });
        message = tail;
    }
    // Read by others while the VM runs (the sampler, the job poll), which only skip them.
    for name in [crate::vitals::guest::FILE, JOB_FILE] {
        if let Err(GuestFileError::Refused(kind)) = guest_file::open_in(status, name) {
            refused.push((name, kind));
        }
    }
    GuestEnd {
        exit_code,
        state,
        message,
        refused,
    }
}

/// Remove what a previous run left (`exit_code`, `termination-log`, `state`), so a VM that
/// dies before its launcher starts is never credited with the last run's end, and a launcher
/// is not taken as present before it has written `state` in this run.
pub(crate) fn clear_end(status: &Path) {
    for f in ["exit_code", "termination-log", "state", JOB_FILE] {
        let _ = std::fs::remove_file(status.join(f));
    }
}

/// Whether a launcher has reported in this run: its `state` says the command started
/// (`running`), ended (`exited`), could not start (`failed`) or that there is nothing to run
/// (`idle`). `starting` is not yet a report: the launcher is still reading the control share
/// and linking the volumes, and the job has not started.
pub(crate) fn launcher_reported(status: &Path) -> bool {
    guest_file::read_head(&status.join("state"), SMALL_FILE_BYTES).is_ok_and(|b| {
        let word = b.trim_ascii();
        !word.is_empty() && word != b"starting"
    })
}

/// The file in the status share where the job marks itself `busy` or `idle`.
pub(crate) const JOB_FILE: &str = "job";

/// What the status share says about the job now: ended once the launcher reports its end
/// (`state` `exited` or `failed`), else its own mark; `None` when it says nothing readable,
/// so the last mark read stays in force.
pub(crate) fn read_job(status: &Path) -> Option<JobActivity> {
    let read = |name| {
        let b = guest_file::read_head(&status.join(name), SMALL_FILE_BYTES).ok()?;
        Some(String::from_utf8_lossy(&b).into_owned())
    };
    let state = read("state").unwrap_or_default();
    if matches!(state.trim(), "exited" | "failed") {
        return Some(JobActivity::Ended);
    }
    parse_job_mark(&read(JOB_FILE)?)
}

#[cfg(test)]
mod tests;
