//! Reading a container's log for `containerLogs`: picks the run (the newest, or the one
//! before it for `previous`), starts at the tail across its rotated files, and streams the
//! output [`Formatter`] makes of each record. With `follow` it reads on whenever the agent's
//! file watch says the run's file or its directory changed ([`LogWatch`]; at least every
//! [`super::wake::pace::FALLBACK`]), moves on to the new file when the collector rotates it,
//! and ends once the run is marked ended (or a newer run exists) and everything is read, or
//! when the stream is dropped (which also ends its watch).

use std::collections::VecDeque;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use axum::body::Bytes;
use futures::Stream;
use k8s_openapi::jiff::Timestamp;
use tokio::fs::File;
use tokio::io::{AsyncReadExt, AsyncSeekExt};

use super::error::LogError;
use super::files::{self, PodLogId};
use super::format::{Flow, Formatter, LogQuery};
use super::tail::tail_start;
use super::wake::{LogWatch, Wake, pace::POLL};

const READ_BLOCK: usize = 64 * 1024;

/// Stream `container`'s log of `pod` as `query` asks; a followed log wakes through `watch`.
///
/// # Errors
/// `NotStarted` when the container has no log yet, `PreviousNotFound` when `previous` is
/// asked and there is no earlier run, `InvalidName` for a name that cannot be a path, `Io`
/// when listing or tailing the files fails. Errors while streaming are the stream's items.
pub(crate) async fn read(
    root: &Path,
    pod: &PodLogId,
    container: &str,
    query: &LogQuery,
    watch: &LogWatch,
) -> Result<impl Stream<Item = io::Result<Bytes>> + Send + 'static, LogError> {
    let dir = pod.container_dir(root, container)?;
    let Located { run, paths, start } = {
        let d = dir.clone();
        let q = query.clone();
        let (pod, container) = (pod.name.clone(), container.to_owned());
        tokio::task::spawn_blocking(move || locate(&d, &q, pod, container))
            .await
            .map_err(|e| LogError::io(&dir, io::Error::other(e)))??
    };
    let follow = query.follow && !query.previous;
    // Watched before the first read: a change after it wakes the first wait.
    let wake = follow.then(|| watch.wake_on(&[dir.join(files::current_name(run))]));
    let cursor = Cursor {
        dir,
        run,
        queue: paths.into(),
        start,
        file: None,
        carry: Vec::new(),
        fmt: Formatter::new(query, Timestamp::now()),
        follow,
        done: false,
        wake,
        woke: false,
    };
    Ok(futures::stream::unfold(cursor, |mut c| async move {
        let item = c.next_chunk().await?;
        Some((item, c))
    }))
}

/// The run to read, its files (oldest first) and where to start: (file index, offset).
struct Located {
    run: u32,
    paths: Vec<PathBuf>,
    start: (usize, u64),
}

fn locate(dir: &Path, q: &LogQuery, pod: String, container: String) -> Result<Located, LogError> {
    let runs = files::list(dir).map_err(|e| LogError::io(dir, e))?;
    let Some(&newest) = runs.keys().next_back() else {
        return Err(LogError::NotStarted { container, pod });
    };
    let run = if q.previous {
        match runs.range(..newest).next_back() {
            Some((&n, _)) => n,
            None => return Err(LogError::PreviousNotFound { container, pod }),
        }
    } else {
        newest
    };
    let mut paths = runs
        .get(&run)
        .map(|r| r.rotated.clone())
        .unwrap_or_default();
    paths.push(dir.join(files::current_name(run)));
    let start = match q.tail_lines {
        Some(n) => tail_start(&paths, n).map_err(|e| LogError::io(dir, e))?,
        None => (0, 0),
    };
    Ok(Located { run, paths, start })
}

struct Cursor {
    dir: PathBuf,
    run: u32,
    /// Files not yet finished, oldest first; the last is the run's current file.
    queue: VecDeque<PathBuf>,
    /// Where the tail starts: (index into the initial queue, offset).
    start: (usize, u64),
    file: Option<(File, u64)>,
    carry: Vec<u8>,
    fmt: Formatter,
    follow: bool,
    done: bool,
    /// Says when the run's file or directory changes (following only).
    wake: Option<Wake>,
    /// A wait ended and the read after it is still to tell `wake` what it found.
    woke: bool,
}

impl Cursor {
    /// The next piece of output; `None` at the end.
    async fn next_chunk(&mut self) -> Option<io::Result<Bytes>> {
        while !self.done {
            match self.step().await {
                Ok(out) if out.is_empty() => {}
                Ok(out) => return Some(Ok(Bytes::from(out))),
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
        None
    }

    /// Read one block (or wait one poll while following) and format what it completes.
    async fn step(&mut self) -> io::Result<Vec<u8>> {
        if self.file.is_none() && !self.open_next().await? {
            self.done = true;
            return Ok(Vec::new());
        }
        let data = self.read_block().await?;
        self.found(!data.is_empty());
        if !data.is_empty() {
            return Ok(self.format(&data));
        }
        if self.queue.len() > 1 {
            // An older file is finished; its last record always ended with a newline.
            self.queue.pop_front();
            self.file = None;
            self.carry.clear();
            return Ok(Vec::new());
        }
        if !self.follow {
            self.done = true;
            return Ok(Vec::new());
        }
        self.wait_at_end().await
    }

    /// At the end of the current file while following: take what came meanwhile, switch to
    /// the new file after a rotation, end once the run is over.
    async fn wait_at_end(&mut self) -> io::Result<Vec<u8>> {
        let ended = self.run_over().await?;
        let current = self.dir.join(files::current_name(self.run));
        let rotated = match (tokio::fs::metadata(&current).await, &self.file) {
            (Ok(m), Some((_, ino))) => m.ino() != *ino,
            _ => false,
        };
        // Records written between the last read and the checks above.
        let data = self.read_block().await?;
        if !data.is_empty() {
            return Ok(self.format(&data));
        }
        if rotated {
            self.file = None;
            self.carry.clear();
            return Ok(Vec::new());
        }
        if ended {
            self.done = true;
            return Ok(Vec::new());
        }
        self.wait().await;
        Ok(Vec::new())
    }

    /// Wait until the run's file or directory changes (or the watch's period passes).
    async fn wait(&mut self) {
        match self.wake.as_mut() {
            Some(w) => {
                w.wait().await;
                self.woke = true;
            }
            None => tokio::time::sleep(POLL).await,
        }
    }

    /// After the first read since a wait: tell the watch whether it found anything.
    fn found(&mut self, found: bool) {
        if std::mem::take(&mut self.woke)
            && let Some(w) = self.wake.as_mut()
        {
            w.found(found);
        }
    }

    /// Open the first file of the queue at its start offset; `false` when there is none.
    async fn open_next(&mut self) -> io::Result<bool> {
        loop {
            let Some(path) = self.queue.front() else {
                return Ok(false);
            };
            let offset = match self.start.0 {
                0 => std::mem::take(&mut self.start.1),
                _ => {
                    self.start.0 -= 1;
                    self.queue.pop_front();
                    continue;
                }
            };
            let mut f = match File::open(path).await {
                Ok(f) => f,
                Err(e) if e.kind() == io::ErrorKind::NotFound && self.queue.len() > 1 => {
                    // A rotated file pruned since it was listed.
                    self.queue.pop_front();
                    continue;
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound && self.follow => {
                    // The current file is between a rotation's rename and its re-creation,
                    // unless the run is over or its logs were removed.
                    if self.run_over().await? {
                        return Ok(false);
                    }
                    self.wait().await;
                    continue;
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
                Err(e) => return Err(e),
            };
            let ino = f.metadata().await?.ino();
            f.seek(io::SeekFrom::Start(offset)).await?;
            self.file = Some((f, ino));
            return Ok(true);
        }
    }

    async fn read_block(&mut self) -> io::Result<Vec<u8>> {
        let Some((f, _)) = self.file.as_mut() else {
            return Ok(Vec::new());
        };
        let mut buf = vec![0u8; READ_BLOCK];
        let n = f.read(&mut buf).await?;
        buf.truncate(n);
        Ok(buf)
    }

    /// Format the whole records `data` completes; keep an unfinished one for the next read.
    fn format(&mut self, data: &[u8]) -> Vec<u8> {
        self.carry.extend_from_slice(data);
        let mut out = Vec::new();
        let mut used = 0;
        while let Some(i) = self.carry[used..].iter().position(|b| *b == b'\n') {
            let line = &self.carry[used..used + i];
            used += i + 1;
            if self.fmt.push(line, &mut out) == Flow::Done {
                self.done = true;
                break;
            }
        }
        self.carry.drain(..used);
        out
    }

    /// The run is over: marked ended by its collector, or the next run has started, or the
    /// Pod's logs were removed.
    async fn run_over(&self) -> io::Result<bool> {
        if !tokio::fs::try_exists(&self.dir).await? {
            return Ok(true);
        }
        let marks = [
            self.dir.join(files::ended_name(self.run)),
            self.dir
                .join(files::current_name(self.run.saturating_add(1))),
        ];
        for mark in marks {
            if tokio::fs::try_exists(&mark).await? {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

#[cfg(test)]
mod tests;
