//! Shared helpers for the `tart_*` integration tests: a temp `TART_HOME` with a knob writer,
//! a `TartCli` pointed at `fake-tart`, an attempt recorder and `/proc` inspection.
//!
//! Knobs are written as raw JSON following the agreed contract (`$TART_HOME/fake-tart/
//! knobs.json`, read by fake-tart on every invocation).

use std::{
    path::Path,
    sync::{Arc, Mutex},
    time::Duration,
};

use tart::{
    Attempt, Deadlines, Network, Observer, RetryPolicy, RunOpts, TartCli, TartCliBuilder, VmName,
};

/// The fake-tart binary built for this test run.
pub(crate) fn fake_tart() -> &'static str {
    env!("CARGO_BIN_EXE_fake-tart")
}

/// A temporary `TART_HOME`.
pub(crate) struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    pub(crate) fn new() -> Self {
        Self {
            dir: tempfile::Builder::new()
                .prefix("tart-test-")
                .tempdir()
                .unwrap(),
        }
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Replace the knob file atomically (fake-tart may read it at any moment).
    pub(crate) fn knobs(&self, v: serde_json::Value) {
        let dir = self.path().join("fake-tart");
        std::fs::create_dir_all(&dir).unwrap();
        let tmp = dir.join("knobs.json.tmp");
        std::fs::write(&tmp, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
        std::fs::rename(&tmp, dir.join("knobs.json")).unwrap();
    }

    /// A `TartCli` builder for fake-tart with fast retries.
    pub(crate) fn cli(&self) -> TartCliBuilder {
        TartCli::builder(self.path())
            .program(fake_tart())
            .retry(fast_retry(3))
    }

    pub(crate) fn run_opts(&self, vm: &VmName) -> RunOpts {
        RunOpts {
            dirs: vec![],
            network: Network::Shared,
            root_disk: Default::default(),
            suspendable: false,
            log_path: self.path().join("logs").join(format!("{vm}.log")),
            log_cap_bytes: 1 << 20,
            start_window: Duration::from_millis(500),
        }
    }
}

pub(crate) fn fast_retry(max_attempts: u32) -> RetryPolicy {
    RetryPolicy {
        max_attempts,
        min_delay: Duration::from_millis(20),
        max_delay: Duration::from_millis(100),
        jitter: false,
    }
}

/// Short deadlines for fault tests.
pub(crate) fn deadlines(d: Duration) -> Deadlines {
    Deadlines {
        version: d,
        list: d,
        get: d,
        set: d,
        delete: d,
        clone: d,
        pull: d,
        prune: d,
        ..Deadlines::default()
    }
}

pub(crate) fn vm(s: &str) -> VmName {
    VmName::new(s).unwrap()
}

/// Records every attempt.
#[derive(Default)]
pub(crate) struct Recorder(Mutex<Vec<Attempt>>);

impl Recorder {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }
    pub(crate) fn attempts(&self) -> Vec<Attempt> {
        self.0.lock().unwrap().clone()
    }
}

impl Observer for Recorder {
    fn attempt(&self, a: &Attempt) {
        self.0.lock().unwrap().push(*a);
    }
}

/// One `/proc/<pid>/stat` entry.
#[derive(Debug, Clone)]
pub(crate) struct Proc {
    pub pid: u32,
    pub state: char,
    pub ppid: u32,
    pub pgrp: u32,
}

pub(crate) fn procs() -> Vec<Proc> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in rd.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        let f: Vec<&str> = stat[close + 2..].split(' ').collect();
        if f.len() < 3 {
            continue;
        }
        out.push(Proc {
            pid,
            state: f[0].chars().next().unwrap_or('?'),
            ppid: f[1].parse().unwrap_or(0),
            pgrp: f[2].parse().unwrap_or(0),
        });
    }
    out
}

/// Live processes whose environment has `TART_HOME=<home>` (children of fake-tart included).
pub(crate) fn procs_of_home(home: &Path) -> Vec<u32> {
    tart_kubelet_tests::fake::processes_of_home(home)
        .into_iter()
        .map(|p| p as u32)
        .collect()
}

/// Processes (zombies included) in process group `pgid`, or the process `pgid` itself.
pub(crate) fn group_or_pid_exists(pgid: u32) -> Vec<Proc> {
    procs()
        .into_iter()
        .filter(|p| p.pgrp == pgid || p.pid == pgid)
        .collect()
}

/// Our own open file descriptors.
pub(crate) fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// Poll `f` every 10 ms until it returns `Some`, failing after `limit`.
pub(crate) async fn poll<T>(limit: Duration, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let until = tokio::time::Instant::now() + limit;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < until,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
