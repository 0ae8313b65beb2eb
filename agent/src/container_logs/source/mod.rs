//! Following one output file (the guest's `status/stdout` or `status/stderr`, or `tart run`'s
//! log) by byte offset, and cutting what it appends into line pieces for CRI records. A file
//! that shrinks or is replaced was truncated, and is read again from its start. The guest
//! writes these files: they are opened through [`crate::guest_file`] (no link followed,
//! nothing but a regular file), and a backlog larger than the log keeps is skipped rather
//! than copied only to be rotated away. Blocking I/O: the collector calls it off the async
//! runtime.

use std::io::{self, Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::cri::{self, MAX_CHUNK, Stream, TART_PREFIX};
use crate::guest_file::{self, GuestFile, GuestFileError, Refused};

/// Most bytes read from one file in one poll, so one chatty stream cannot hold the others up.
const READ_MAX: u64 = 4 << 20;

/// An unfinished line waits this long for its newline before it is written as a `P` record.
pub(crate) const IDLE_FLUSH: Duration = Duration::from_secs(1);

/// A piece of a line: all of it (`ends_line`) or its first part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Piece {
    pub bytes: Vec<u8>,
    pub ends_line: bool,
}

/// Cuts a byte stream into lines, holding back an unfinished last line.
#[derive(Debug, Default)]
pub(crate) struct Lines {
    buf: Vec<u8>,
}

impl Lines {
    /// Feed `data`: each finished line becomes a piece (without its newline), and an
    /// unfinished line that reached [`MAX_CHUNK`] gives its first `MAX_CHUNK` bytes.
    pub(crate) fn push(&mut self, data: &[u8], out: &mut Vec<Piece>) {
        self.buf.extend_from_slice(data);
        let mut start = 0;
        while let Some(i) = self.buf[start..].iter().position(|b| *b == b'\n') {
            out.push(Piece {
                bytes: self.buf[start..start + i].to_vec(),
                ends_line: true,
            });
            start += i + 1;
        }
        while self.buf.len() - start >= MAX_CHUNK {
            out.push(Piece {
                bytes: self.buf[start..start + MAX_CHUNK].to_vec(),
                ends_line: false,
            });
            start += MAX_CHUNK;
        }
        self.buf.drain(..start);
    }

    /// Give up the unfinished line as a piece that ends it or not; nothing when there is none.
    pub(crate) fn flush(&mut self, ends_line: bool, out: &mut Vec<Piece>) {
        if !self.buf.is_empty() {
            out.push(Piece {
                bytes: std::mem::take(&mut self.buf),
                ends_line,
            });
        }
    }

    /// Bytes held back.
    pub(crate) fn pending(&self) -> usize {
        self.buf.len()
    }
}

/// Where a follower starts in its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StartAt {
    /// Offset 0: the file holds only this run's output.
    Beginning,
    /// The file's length when the collector starts: what was there belongs to earlier runs.
    End,
}

/// Something a poll found wrong with its file; the file was not read, or not all of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    /// Something other than a regular file is in its place.
    Refused(Refused),
    /// More was unread than `keep`: this many bytes were skipped.
    Skipped(u64),
}

/// One followed file.
#[derive(Debug)]
pub(crate) struct Follower {
    path: PathBuf,
    stream: Stream,
    tagged: bool,
    /// The most unread bytes copied: older ones would only be rotated away.
    keep: u64,
    /// The last poll left bytes unread.
    behind: bool,
    /// Bytes read over the follower's life.
    total: u64,
    offset: u64,
    ino: Option<u64>,
    lines: Lines,
    at_line_start: bool,
    last_data: Instant,
}

impl Follower {
    /// A follower of `path`; `tagged` (`tart run`'s own log, not the guest's) prefixes each
    /// line with [`TART_PREFIX`] and opens the file as the agent's own. With
    /// [`StartAt::End`] the file's length is taken now (a missing file starts at 0).
    pub(crate) fn new(path: PathBuf, stream: Stream, tagged: bool, start: StartAt) -> Self {
        let meta = match start {
            StartAt::Beginning => None,
            StartAt::End => open(&path, tagged).ok(),
        };
        Self {
            path,
            stream,
            tagged,
            keep: u64::MAX,
            behind: false,
            total: 0,
            offset: meta.as_ref().map_or(0, |m| m.len),
            ino: meta.as_ref().map(|m| m.ino),
            lines: Lines::default(),
            at_line_start: true,
            last_data: Instant::now(),
        }
    }

    /// Copy at most the last `keep` bytes of what is unread at a poll.
    #[must_use]
    pub(crate) fn keeping(mut self, keep: u64) -> Self {
        self.keep = keep;
        self
    }

    /// Whether the last poll left bytes of the file unread.
    pub(crate) fn behind(&self) -> bool {
        self.behind
    }

    /// Bytes read from the file over this follower's life (none while it is unchanged).
    pub(crate) fn read_total(&self) -> u64 {
        self.total
    }

    /// Where reading would resume without losing or repeating a line: the file's inode and
    /// the offset of the first byte not yet written as a record. `None` before the file was
    /// seen.
    pub(crate) fn checkpoint(&self) -> Option<(u64, u64)> {
        let pending = self.lines.pending() as u64;
        self.ino
            .map(|ino| (ino, self.offset.saturating_sub(pending)))
    }

    /// Continue from a [`Follower::checkpoint`] taken by an earlier collector of the same
    /// run, when the file is still the one it was taken on.
    pub(crate) fn resume(&mut self, ino: u64, offset: u64) {
        let same = open(&self.path, self.tagged).is_ok_and(|f| f.ino == ino);
        if same {
            self.ino = Some(ino);
            self.offset = offset;
        }
    }

    /// Read what the file gained since the last poll and append its records, stamped `time`,
    /// to `out`. `last` gives up an unfinished line as a whole one (the run is over); otherwise
    /// one that waited [`IDLE_FLUSH`] is written as a `P` record. A missing file is no error;
    /// a refused one or a skipped backlog is the returned [`Fault`].
    ///
    /// # Errors
    /// I/O errors opening or reading the file; what was read before the error is kept.
    pub(crate) fn poll(
        &mut self,
        time: &str,
        last: bool,
        out: &mut Vec<u8>,
    ) -> io::Result<Option<Fault>> {
        let mut pieces = Vec::new();
        self.behind = false;
        let read = match self.read_new(&mut pieces) {
            Ok(skipped) => Ok((skipped > 0).then_some(Fault::Skipped(skipped))),
            Err(GuestFileError::Missing) => Ok(None),
            Err(GuestFileError::Refused(r)) => Ok(Some(Fault::Refused(r))),
            Err(GuestFileError::Io(e)) => Err(e),
        };
        let now = Instant::now();
        if last {
            self.lines.flush(true, &mut pieces);
        } else if self.lines.pending() > 0 && now.duration_since(self.last_data) >= IDLE_FLUSH {
            self.lines.flush(false, &mut pieces);
        }
        for p in pieces {
            self.encode(time, p, out);
        }
        read
    }

    /// Read what is new; returns how many bytes were skipped.
    fn read_new(&mut self, pieces: &mut Vec<Piece>) -> Result<u64, GuestFileError> {
        let GuestFile { mut file, len, ino } = open(&self.path, self.tagged)?;
        if self.ino.is_some_and(|i| i != ino) || len < self.offset {
            // Replaced or truncated: what it holds now is new output.
            self.lines.flush(true, pieces);
            self.offset = 0;
        }
        self.ino = Some(ino);
        let skipped = len.saturating_sub(self.offset).saturating_sub(self.keep);
        if skipped > 0 {
            // What the log would rotate away before anyone could read it is not copied.
            self.lines.flush(false, pieces);
            self.offset += skipped;
        }
        let want = len.saturating_sub(self.offset).min(READ_MAX);
        if want == 0 {
            return Ok(skipped);
        }
        file.seek(SeekFrom::Start(self.offset))?;
        let mut buf = Vec::new();
        let n = file.take(want).read_to_end(&mut buf)?;
        self.offset += n as u64;
        self.total += n as u64;
        self.behind = len > self.offset;
        if n > 0 {
            self.last_data = Instant::now();
            self.lines.push(&buf, pieces);
        }
        Ok(skipped)
    }

    fn encode(&mut self, time: &str, p: Piece, out: &mut Vec<u8>) {
        let content = if self.tagged && self.at_line_start {
            [TART_PREFIX, &p.bytes].concat()
        } else {
            p.bytes
        };
        cri::encode_piece(out, time, self.stream, &content, p.ends_line);
        self.at_line_start = p.ends_line;
    }
}

/// Open a source: the guest's files as untrusted ([`guest_file`]), `tart run`'s own log
/// (`tart_log`) as the agent's own ([`GuestFile::open_own`]).
fn open(path: &std::path::Path, tart_log: bool) -> Result<GuestFile, GuestFileError> {
    if tart_log {
        GuestFile::open_own(path)
    } else {
        guest_file::open_path(path)
    }
}

#[cfg(test)]
mod tests;
