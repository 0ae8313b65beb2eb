//! Progress on the terminal: one live status line rewritten in place on a TTY, plain
//! timestamped lines (at most one status line every 5 s, or on change) otherwise.

use std::{
    io::{IsTerminal, Write},
    time::{Duration, Instant},
};

/// Progress printer.
pub struct Progress {
    tty: bool,
    start: Instant,
    last_status: String,
    last_print: Option<Instant>,
}

impl Default for Progress {
    fn default() -> Self {
        Self::new()
    }
}

impl Progress {
    /// Detects whether stdout is a terminal.
    pub fn new() -> Self {
        Self {
            tty: std::io::stdout().is_terminal(),
            start: Instant::now(),
            last_status: String::new(),
            last_print: None,
        }
    }

    fn stamp(&self) -> String {
        format!("[{:>6.1}s]", self.start.elapsed().as_secs_f64())
    }

    /// A permanent line (an event).
    pub fn line(&mut self, msg: &str) {
        let mut out = std::io::stdout().lock();
        if self.tty {
            let _ = write!(out, "\r\x1b[2K");
        }
        let _ = writeln!(out, "{} {msg}", self.stamp());
        if self.tty && !self.last_status.is_empty() {
            let _ = write!(out, "{} {}", self.stamp(), self.last_status);
        }
        let _ = out.flush();
    }

    /// The current status (rewritten in place on a TTY).
    pub fn status(&mut self, msg: &str) {
        let changed = msg != self.last_status;
        let due = self
            .last_print
            .is_none_or(|t| t.elapsed() >= Duration::from_secs(5));
        self.last_status = msg.to_string();
        let mut out = std::io::stdout().lock();
        if self.tty {
            let _ = write!(out, "\r\x1b[2K{} {msg}", self.stamp());
        } else if changed && due {
            let _ = writeln!(out, "{} {msg}", self.stamp());
            self.last_print = Some(Instant::now());
        } else {
            return;
        }
        let _ = out.flush();
    }
}
