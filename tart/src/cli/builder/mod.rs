//! [`TartCliBuilder`]: program, `TART_HOME`, environment, deadlines, retry policy, observer.

use std::{ffi::OsString, path::PathBuf, sync::Arc};

use super::{Inner, TartCli};
use crate::{Deadlines, Observer, observe::NoopObserver, process, retry::RetryPolicy};

/// Builder for [`TartCli`]: only `TART_HOME` is required, every other setting has a default.
pub struct TartCliBuilder {
    program: PathBuf,
    tart_home: PathBuf,
    extra_env: Vec<(OsString, OsString)>,
    env_clear: bool,
    no_auto_prune: bool,
    track_inflight: bool,
    deadlines: Deadlines,
    retry: RetryPolicy,
    observer: Arc<dyn Observer>,
    output_cap: usize,
}

impl TartCliBuilder {
    /// Program to run (default `tart`, looked up in `PATH`).
    pub fn program(mut self, p: impl Into<PathBuf>) -> Self {
        self.program = p.into();
        self
    }
    /// An extra environment variable for every call.
    pub fn env(mut self, k: impl Into<OsString>, v: impl Into<OsString>) -> Self {
        self.extra_env.push((k.into(), v.into()));
        self
    }
    /// Start children from an empty environment (plus `PATH`) instead of the agent's.
    pub fn env_clear(mut self, yes: bool) -> Self {
        self.env_clear = yes;
        self
    }
    /// Set `TART_NO_AUTO_PRUNE` (docs/reference/tart-cli.md §4: its mere presence disables
    /// auto-prune).
    pub fn no_auto_prune(mut self, yes: bool) -> Self {
        self.no_auto_prune = yes;
        self
    }
    /// Record each running command under `$TART_HOME/.tart-kubelet/inflight` so that
    /// [`TartCli::reap_orphans`] can end what a crashed agent left running.
    pub fn track_inflight(mut self, yes: bool) -> Self {
        self.track_inflight = yes;
        self
    }
    /// Per-operation deadlines (default: those of docs/reference/tart-cli.md §7.4).
    pub fn deadlines(mut self, d: Deadlines) -> Self {
        self.deadlines = d;
        self
    }
    /// Retry policy for retryable kinds.
    pub fn retry(mut self, r: RetryPolicy) -> Self {
        self.retry = r;
        self
    }
    /// Receives every attempt.
    pub fn observer(mut self, o: Arc<dyn Observer>) -> Self {
        self.observer = o;
        self
    }
    /// Stored stdout/stderr bytes per stream and call.
    pub fn output_cap(mut self, bytes: usize) -> Self {
        self.output_cap = bytes;
        self
    }
    /// The client. Extra variables named `TART_HOME` or `CI` are dropped: the home is the
    /// builder's, and `CI=1` is always set.
    pub fn build(self) -> TartCli {
        // Extra variables first, and never TART_HOME or CI: the home is this client's, and
        // the progress parser needs CI's plain lines.
        let mut env: Vec<(OsString, OsString)> = self
            .extra_env
            .into_iter()
            .filter(|(k, _)| k != "TART_HOME" && k != "CI")
            .collect();
        env.push(("TART_HOME".into(), self.tart_home.clone().into_os_string()));
        // docs/reference/tart-cli.md §1.2: plain progress lines instead of ANSI rewrites.
        env.push(("CI".into(), "1".into()));
        if self.no_auto_prune {
            env.push(("TART_NO_AUTO_PRUNE".into(), "1".into()));
        }
        let inflight = self
            .track_inflight
            .then(|| self.tart_home.join(".tart-kubelet").join("inflight"));
        TartCli {
            inner: Arc::new(Inner {
                program: self.program,
                tart_home: self.tart_home,
                env,
                env_clear: self.env_clear,
                deadlines: self.deadlines,
                retry: self.retry,
                observer: self.observer,
                output_cap: self.output_cap,
                inflight,
            }),
        }
    }
}
impl TartCli {
    /// Start building a client for `tart_home`.
    pub fn builder(tart_home: impl Into<PathBuf>) -> TartCliBuilder {
        TartCliBuilder {
            program: "tart".into(),
            tart_home: tart_home.into(),
            extra_env: Vec::new(),
            env_clear: false,
            no_auto_prune: false,
            track_inflight: false,
            deadlines: Deadlines::default(),
            retry: RetryPolicy::default(),
            observer: Arc::new(NoopObserver),
            output_cap: process::DEFAULT_OUTPUT_CAP,
        }
    }
}

#[cfg(test)]
mod tests;
