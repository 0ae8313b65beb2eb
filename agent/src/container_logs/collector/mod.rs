//! The collector: one task per run of a Pod's VM that follows the guest's mirrored output and
//! `tart run`'s log and appends them as CRI records to the run's log file. It reads them when
//! the agent's file watch says one changed ([`LogWatch`]), and at least every
//! [`super::wake::pace::FALLBACK`] (every [`super::wake::pace::POLL`] without a watch).
//! Dropping its handle stops it after a last read of every source; it then marks the run
//! ended. A collector started again for a run (after an agent restart) resumes from the
//! run's saved offsets (`checkpoint.rs`). Starting and stopping collectors with the VM is the
//! worker's job.

use std::collections::HashSet;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use k8s_openapi::jiff::Timestamp;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tracing::{Instrument, info_span, warn};

use super::checkpoint::{self, Points};
use super::cri::{self, Stream};
use super::files::{self, PodLogId};
use super::source::{Fault, Follower, StartAt};
use super::wake::{LogWatch, Wake};
use super::writer::{Rotation, RunLog};

/// At most this many polls drain a run's unread output at its end: with the default rotation
/// (50 MiB kept, 4 MiB a poll) it takes 13.
const DRAIN_ROUNDS: usize = 64;

/// Records waiting for the log file (which cannot be written) stop the sources being read.
const BACKLOG_MAX: usize = 8 << 20;

/// Who wrote a source file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    /// The guest command, through the launcher's status share.
    Guest,
    /// `tart run` itself: each line is prefixed with [`cri::TART_PREFIX`].
    Tart,
}

/// One file the collector follows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Source {
    pub path: PathBuf,
    pub stream: Stream,
    pub origin: Origin,
    pub start: StartAt,
}

/// Told when a source misbehaves: the source and the fault, at most once per source and kind
/// of fault (refused, skipped) in a collector's life.
#[derive(Clone)]
pub(crate) struct FaultReport(pub Arc<ReportFn>);

/// What a [`FaultReport`] calls.
pub(crate) type ReportFn = dyn Fn(&Source, Fault) + Send + Sync;

impl std::fmt::Debug for FaultReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FaultReport")
    }
}

/// What one collector follows and where it writes.
#[derive(Debug, Clone)]
pub(crate) struct CollectorSpec {
    /// The Pod log root (kubelet's `/var/log/pods`).
    pub root: PathBuf,
    pub pod: PodLogId,
    pub container: String,
    /// The run's restart number: its file is `<restart>.log`.
    pub restart: u32,
    pub sources: Vec<Source>,
    pub rotation: Rotation,
    /// Says when the sources change.
    pub watch: LogWatch,
    /// Where faults go besides the agent's log.
    pub report: Option<FaultReport>,
}

impl CollectorSpec {
    /// The sources of a VM run: the status share's `stdout` and `stderr` from their start
    /// (the share is emptied before each run), and `tart run`'s log from its present end (it
    /// keeps earlier runs' output), on `stderr`, tagged. Default rotation.
    pub(crate) fn for_vm(
        root: PathBuf,
        pod: PodLogId,
        container: String,
        restart: u32,
        status_dir: &Path,
        tart_log: PathBuf,
        watch: LogWatch,
    ) -> Self {
        let guest = |name: &str, stream| Source {
            path: status_dir.join(name),
            stream,
            origin: Origin::Guest,
            start: StartAt::Beginning,
        };
        Self {
            root,
            pod,
            container,
            restart,
            sources: vec![
                guest("stdout", Stream::Stdout),
                guest("stderr", Stream::Stderr),
                Source {
                    path: tart_log,
                    stream: Stream::Stderr,
                    origin: Origin::Tart,
                    start: StartAt::End,
                },
            ],
            rotation: Rotation::default(),
            watch,
            report: None,
        }
    }
}

/// A running collector. Dropping it stops the collector after a last read of its sources; the
/// task finishes that read and marks the run ended in the background.
#[derive(Debug)]
pub(crate) struct CollectorHandle {
    /// Dropped to stop the collector.
    _stop: oneshot::Sender<()>,
    /// The collector's task; only tests wait for it ([`Self::finish`]).
    #[cfg_attr(not(test), allow(dead_code))]
    task: JoinHandle<()>,
}

#[cfg(test)]
impl CollectorHandle {
    /// Stop, and wait until the last records are written and the run is marked ended.
    pub(crate) async fn finish(self) {
        let Self { _stop, task } = self;
        drop(_stop);
        let _ = task.await;
    }
}

/// Start a collector. The start offsets ([`StartAt::End`], or the run's saved checkpoint)
/// are taken, and the sources watched, before this returns.
pub(crate) fn spawn(spec: CollectorSpec) -> CollectorHandle {
    let paths: Vec<PathBuf> = spec.sources.iter().map(|s| s.path.clone()).collect();
    let wake = spec.watch.wake_on(&paths);
    // A run's log keeps at most this much; a larger backlog is skipped, not copied.
    let keep = spec
        .rotation
        .max_bytes
        .saturating_mul(spec.rotation.max_files as u64);
    let mut followers: Vec<Follower> = spec
        .sources
        .iter()
        .map(|s| {
            Follower::new(s.path.clone(), s.stream, s.origin == Origin::Tart, s.start).keeping(keep)
        })
        .collect();
    let offsets = spec
        .pod
        .container_dir(&spec.root, &spec.container)
        .ok()
        .map(|d| d.join(files::offsets_name(spec.restart)));
    if let Some(path) = &offsets {
        for (i, ino, offset) in checkpoint::load(path) {
            if let Some(f) = followers.get_mut(i) {
                f.resume(ino, offset);
            }
        }
    }
    let span = info_span!(
        "pod_logs",
        pod.namespace = %spec.pod.namespace,
        pod.name = %spec.pod.name,
        restart = spec.restart,
    );
    let (tx, rx) = oneshot::channel();
    let state = State {
        followers,
        log: None,
        backlog: Vec::new(),
        last_error: None,
        faults: HashSet::new(),
        offsets,
        saved: Points::new(),
        saved_at: None,
        spec,
    };
    let task = tokio::spawn(run(state, wake, rx).instrument(span));
    CollectorHandle { _stop: tx, task }
}

async fn run(mut state: State, mut wake: Wake, mut stop: oneshot::Receiver<()>) {
    loop {
        let last = !matches!(stop.try_recv(), Err(oneshot::error::TryRecvError::Empty));
        let before = state.read_total();
        state = match tokio::task::spawn_blocking(move || state.step(last)).await {
            Ok(s) => s,
            Err(error) => {
                warn!(%error, "log collector step failed");
                return;
            }
        };
        if last {
            return;
        }
        wake.found(state.read_total() != before);
        if state.more_now() {
            // More is unread than one step reads, and no notification may come for it.
            tokio::task::yield_now().await;
            continue;
        }
        tokio::select! {
            () = wake.wait() => {}
            _ = &mut stop => {}
        }
    }
}

struct State {
    spec: CollectorSpec,
    followers: Vec<Follower>,
    log: Option<RunLog>,
    backlog: Vec<u8>,
    last_error: Option<io::ErrorKind>,
    /// The faults reported: source index, and whether it was a skip.
    faults: HashSet<(usize, bool)>,
    /// Where the checkpoint goes, the last one saved, and when.
    offsets: Option<PathBuf>,
    saved: Points,
    saved_at: Option<std::time::Instant>,
}

/// The checkpoint is saved at most this often (and at the run's end): its write and rename can
/// take a file system's journal commit (on ext4 up to ~100 ms every few seconds), which must
/// not hold up the lines behind it. After an agent crash at most this much output is
/// collected a second time.
const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

impl State {
    /// Bytes read from the sources so far.
    fn read_total(&self) -> u64 {
        self.followers.iter().map(Follower::read_total).sum()
    }

    /// A source has more unread than one step reads, and it can be read now (records are
    /// not backed up).
    fn more_now(&self) -> bool {
        self.backlog.len() < BACKLOG_MAX && self.followers.iter().any(Follower::behind)
    }

    /// One poll: read the sources (unless records are backed up), write, and on the `last`
    /// step mark the run ended.
    fn step(mut self, last: bool) -> Self {
        if last {
            // What is still unread (at most what the log keeps: more was skipped) is copied
            // before the last read, a poll's worth at a time.
            for _ in 0..DRAIN_ROUNDS {
                self.poll_once(false);
                if !self.followers.iter().any(Follower::behind) {
                    break;
                }
            }
        }
        self.poll_once(last);
        self
    }

    fn poll_once(&mut self, last: bool) {
        let time = cri::format_time(Timestamp::now());
        let mut result = Ok(());
        if self.backlog.len() < BACKLOG_MAX || last {
            let mut faults = Vec::new();
            for (i, f) in self.followers.iter_mut().enumerate() {
                match f.poll(&time, last, &mut self.backlog) {
                    Ok(Some(fault)) => faults.push((i, fault)),
                    Ok(None) => {}
                    Err(e) => result = Err(e),
                }
            }
            for (i, fault) in faults {
                self.fault(i, fault);
            }
        }
        if let Err(e) = self.write(last) {
            result = Err(e);
        }
        self.report(result);
    }

    fn write(&mut self, last: bool) -> io::Result<()> {
        if self.log.is_none() {
            let dir = self
                .spec
                .pod
                .container_dir(&self.spec.root, &self.spec.container)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
            self.log = Some(RunLog::open(&dir, self.spec.restart, self.spec.rotation)?);
        }
        let Some(log) = self.log.as_mut() else {
            return Ok(());
        };
        log.append(&mut self.backlog, Timestamp::now())?;
        let due = last
            || self
                .saved_at
                .is_none_or(|t| t.elapsed() >= CHECKPOINT_EVERY);
        let points: Points = self.followers.iter().map(Follower::checkpoint).collect();
        if let Some(path) = &self.offsets
            && due
            && points != self.saved
        {
            checkpoint::save(path, &points)?;
            self.saved = points;
            self.saved_at = Some(std::time::Instant::now());
        }
        if last {
            log.mark_ended()?;
        }
        Ok(())
    }

    /// Warn about a source's fault and pass it on, once per source and kind.
    fn fault(&mut self, source: usize, fault: Fault) {
        if !self
            .faults
            .insert((source, matches!(fault, Fault::Skipped(_))))
        {
            return;
        }
        let Some(src) = self.spec.sources.get(source) else {
            return;
        };
        let file = src
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        match fault {
            Fault::Refused(r) => {
                warn!(%file, found = r.as_str(), "output file refused: not a regular file");
            }
            Fault::Skipped(bytes) => {
                warn!(%file, bytes, "output skipped: more unread than the log keeps");
            }
        }
        if let Some(report) = &self.spec.report {
            (report.0)(src, fault);
        }
    }

    /// Warn when a failure starts or changes kind, and once when it clears.
    fn report(&mut self, result: io::Result<()>) {
        match result {
            Ok(()) if self.last_error.take().is_some() => {
                tracing::info!("pod log collection recovered");
            }
            Ok(()) => {}
            Err(error) if self.last_error != Some(error.kind()) => {
                self.last_error = Some(error.kind());
                warn!(%error, "pod log collection failed; retrying");
            }
            Err(_) => {}
        }
    }
}

#[cfg(test)]
mod tests;
