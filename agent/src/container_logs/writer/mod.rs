//! One run's log file, `<restart>.log`, written in whole CRI records and rotated by size as
//! kubelet's container log manager rotates: the full file is renamed
//! `<restart>.log.<timestamp>` and a new one started, keeping at most `max_files` files of the
//! run (the current one included). Opening a run removes the logs of runs older than the
//! previous one, so `previous` always has the run before. Blocking I/O.

use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use k8s_openapi::jiff::Timestamp;

use super::files::{self, FileKind};

/// Log directories are `0700` and files `0600`: output may hold whatever the job printed.
const DIR_MODE: u32 = 0o700;
const FILE_MODE: u32 = 0o600;

/// When a run's log is rotated and how many of its files are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rotation {
    /// A file is rotated before a record would take it past this size.
    pub max_bytes: u64,
    /// Files kept per run, the current one included.
    pub max_files: usize,
}

impl Default for Rotation {
    /// Kubelet's defaults: 10 MiB, 5 files.
    fn default() -> Self {
        Self {
            max_bytes: 10 << 20,
            max_files: 5,
        }
    }
}

/// The writer of one run's log.
#[derive(Debug)]
pub(crate) struct RunLog {
    dir: PathBuf,
    restart: u32,
    file: File,
    size: u64,
    rotation: Rotation,
}

impl RunLog {
    /// Open (or create, `0600` in `0700` directories) `<dir>/<restart>.log` for appending;
    /// remove the files of runs before `restart - 1` and this run's end mark.
    ///
    /// # Errors
    /// I/O errors creating the directory or the file, or removing old runs.
    pub(crate) fn open(dir: &Path, restart: u32, rotation: Rotation) -> io::Result<Self> {
        DirBuilder::new()
            .recursive(true)
            .mode(DIR_MODE)
            .create(dir)?;
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let run = match entry.file_name().to_str().and_then(files::classify) {
                Some(
                    FileKind::Current(n)
                    | FileKind::Rotated(n, _)
                    | FileKind::Ended(n)
                    | FileKind::Offsets(n),
                ) => n,
                None => continue,
            };
            let ended_here = entry.file_name().to_str() == Some(&files::ended_name(restart));
            if run.saturating_add(1) < restart || ended_here {
                remove_file(&entry.path())?;
            }
        }
        let path = dir.join(files::current_name(restart));
        let file = open_append(&path)?;
        let size = file.metadata()?.len();
        Ok(Self {
            dir: dir.to_owned(),
            restart,
            file,
            size,
            rotation,
        })
    }

    /// Write the whole records at the start of `batch` and remove them from it, rotating the
    /// file whenever the next record would not fit. A record larger than the limit goes
    /// alone into a fresh file.
    ///
    /// # Errors
    /// I/O errors writing or rotating; what was written is already removed from `batch`.
    pub(crate) fn append(&mut self, batch: &mut Vec<u8>, now: Timestamp) -> io::Result<()> {
        while !batch.is_empty() {
            let room = self.rotation.max_bytes.saturating_sub(self.size);
            let mut cut = cut_point(batch, room);
            if cut == 0 {
                if self.size > 0 {
                    self.rotate(now)?;
                    continue;
                }
                cut = batch
                    .iter()
                    .position(|b| *b == b'\n')
                    .map_or(batch.len(), |i| i + 1);
            }
            self.file.write_all(&batch[..cut])?;
            self.size += cut as u64;
            batch.drain(..cut);
        }
        Ok(())
    }

    /// Mark the run over: `<restart>.ended`, which tells a following reader to stop.
    ///
    /// # Errors
    /// I/O errors creating the mark.
    pub(crate) fn mark_ended(&self) -> io::Result<()> {
        open_append(&self.dir.join(files::ended_name(self.restart))).map(drop)
    }

    fn rotate(&mut self, now: Timestamp) -> io::Result<()> {
        let current = self.dir.join(files::current_name(self.restart));
        let mut seq = 0;
        let target = loop {
            let t = self.dir.join(files::rotated_name(self.restart, now, seq));
            if !t.exists() {
                break t;
            }
            seq += 1;
        };
        std::fs::rename(&current, &target)?;
        self.file = open_append(&current)?;
        self.size = 0;
        let runs = files::list(&self.dir)?;
        let rotated = runs
            .get(&self.restart)
            .map(|r| r.rotated.as_slice())
            .unwrap_or_default();
        let keep = self.rotation.max_files.saturating_sub(1);
        for old in &rotated[..rotated.len().saturating_sub(keep)] {
            remove_file(old)?;
        }
        Ok(())
    }
}

/// How many bytes of `batch` are whole records that fit in `room`.
pub(crate) fn cut_point(batch: &[u8], room: u64) -> usize {
    let limit = usize::try_from(room).unwrap_or(usize::MAX).min(batch.len());
    batch[..limit]
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |i| i + 1)
}

fn open_append(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .mode(FILE_MODE)
        .open(path)
}

fn remove_file(path: &Path) -> io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests;
