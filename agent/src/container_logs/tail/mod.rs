//! `tailLines` across a run's files: where the last `n` records start, found by reading the
//! files backwards in blocks from the newest, so a tail of a large log reads only its end.
//! Blocking I/O.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::PathBuf;

const BLOCK: u64 = 64 * 1024;

/// The file index and offset where the last `n` whole lines of `files` (oldest first) begin.
/// A file that vanished counts as empty.
///
/// # Errors
/// I/O errors other than not-found.
pub(super) fn tail_start(files: &[PathBuf], n: u64) -> io::Result<(usize, u64)> {
    let mut want = n;
    for (idx, path) in files.iter().enumerate().rev() {
        let mut f = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        match tail_in_file(&mut f, want)? {
            Ok(offset) => return Ok((idx, offset)),
            Err(lines) if lines == want => return Ok((idx, 0)),
            Err(lines) => want -= lines,
        }
    }
    Ok((0, 0))
}

/// `Ok(offset)` where the last `want` newline-ended lines of `f` begin, after the newline
/// before them (so an unfinished last line is never counted); `Err(lines)` when the file has
/// only `lines` (≤ `want`) of them.
fn tail_in_file(f: &mut File, want: u64) -> io::Result<Result<u64, u64>> {
    let mut pos = f.metadata()?.len();
    let mut seen = 0u64;
    let mut buf = vec![0u8; BLOCK as usize];
    while pos > 0 {
        let start = pos.saturating_sub(BLOCK);
        let n = usize::try_from(pos - start).unwrap_or(0);
        f.seek(SeekFrom::Start(start))?;
        f.read_exact(&mut buf[..n])?;
        for i in (0..n).rev() {
            if buf[i] == b'\n' {
                if seen == want {
                    return Ok(Ok(start + i as u64 + 1));
                }
                seen += 1;
            }
        }
        pos = start;
    }
    Ok(Err(seen))
}

#[cfg(test)]
mod tests;
