//! The agent's own log file with size-based rotation, usable as a tracing-subscriber writer.
//!
//! newsyslog on macOS only renames files and has no copy-truncate mode, so a process that keeps
//! its file descriptor writes into the renamed file forever
//! (docs/reference/host-and-conventions.md §1.6). The agent therefore rotates its own file: when a
//! write would take it past `max_bytes`, `log` becomes `log.1`, `log.1` becomes `log.2`, ... and
//! the oldest beyond `keep` is deleted. If something else renames or deletes the file (an operator,
//! newsyslog), the writer notices within a second and reopens the path.
//!
//! Use (agent entry code):
//! ```ignore
//! use tracing_subscriber::fmt::writer::MakeWriterExt as _;
//! let file = RotatingFile::open(&path, DEFAULT_MAX_BYTES, DEFAULT_KEEP)?;
//! tracing_subscriber::fmt::layer().with_ansi(false).with_writer(std::io::stderr.and(file))
//! ```
//! One event is one `write` of a whole formatted line, so a line is never split across files.
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Default size at which the file is rotated (50 MiB).
pub(crate) const DEFAULT_MAX_BYTES: u64 = 50 << 20;
/// Default number of rotated files kept besides the live one.
pub(crate) const DEFAULT_KEEP: usize = 5;
/// How often the writer checks that the path still names its open file.
const REOPEN_CHECK: Duration = Duration::from_secs(1);

/// A log file rotated by size. Cheap to share: clones of the handle are not needed, because
/// `tracing_subscriber` takes `&self` ([`tracing_subscriber::fmt::MakeWriter`]).
#[derive(Debug)]
pub(crate) struct RotatingFile {
    path: PathBuf,
    max_bytes: u64,
    keep: usize,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    file: File,
    written: u64,
    ino: u64,
    checked: Instant,
}

fn open_append(path: &Path) -> io::Result<(File, u64, u64)> {
    use std::os::unix::fs::OpenOptionsExt as _;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o640)
        .open(path)?;
    let meta = file.metadata()?;
    Ok((file, meta.len(), meta.ino()))
}

impl RotatingFile {
    /// Opens (appending) or creates `path` and its directory.
    ///
    /// # Errors
    /// When the directory or the file cannot be created or opened.
    pub(crate) fn open(path: impl Into<PathBuf>, max_bytes: u64, keep: usize) -> io::Result<Self> {
        let path = path.into();
        let (file, written, ino) = open_append(&path)?;
        Ok(Self {
            path,
            max_bytes: max_bytes.max(1),
            keep,
            state: Mutex::new(State {
                file,
                written,
                ino,
                checked: Instant::now(),
            }),
        })
    }

    /// `log.N`.
    fn numbered(&self, n: usize) -> PathBuf {
        let mut s = self.path.clone().into_os_string();
        s.push(format!(".{n}"));
        PathBuf::from(s)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves a usable file; keep logging.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn rotate(&self, st: &mut State) -> io::Result<()> {
        if self.keep == 0 {
            let _ = std::fs::remove_file(&self.path);
        } else {
            let _ = std::fs::remove_file(self.numbered(self.keep));
            for n in (1..self.keep).rev() {
                let _ = std::fs::rename(self.numbered(n), self.numbered(n + 1));
            }
            let _ = std::fs::rename(&self.path, self.numbered(1));
        }
        self.reopen(st)
    }

    fn reopen(&self, st: &mut State) -> io::Result<()> {
        let (file, written, ino) = open_append(&self.path)?;
        *st = State {
            file,
            written,
            ino,
            checked: Instant::now(),
        };
        Ok(())
    }

    fn write_locked(&self, st: &mut State, buf: &[u8]) -> io::Result<usize> {
        if st.checked.elapsed() >= REOPEN_CHECK {
            st.checked = Instant::now();
            let same = std::fs::metadata(&self.path)
                .map(|m| m.ino() == st.ino)
                .unwrap_or(false);
            if !same {
                self.reopen(st)?;
            }
        }
        if st.written > 0 && st.written + buf.len() as u64 > self.max_bytes {
            self.rotate(st)?;
        }
        st.file.write_all(buf)?;
        st.written += buf.len() as u64;
        Ok(buf.len())
    }
}

/// The writer handed to tracing for one event; holds the lock for that event.
#[derive(Debug)]
pub(crate) struct RotatingWriter<'a> {
    owner: &'a RotatingFile,
    state: MutexGuard<'a, State>,
}

impl Write for RotatingWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.owner.write_locked(&mut self.state, buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.state.file.flush()
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for RotatingFile {
    type Writer = RotatingWriter<'a>;

    fn make_writer(&'a self) -> Self::Writer {
        RotatingWriter {
            owner: self,
            state: self.lock(),
        }
    }
}

#[cfg(test)]
mod tests;
