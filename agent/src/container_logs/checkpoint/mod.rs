//! How far a run's collector has read its sources, saved as `<restart>.offsets` beside the
//! run's log, so a collector started again for the same run (after an agent restart) goes on
//! where the last one stopped instead of writing the run's output twice. One line a source:
//! `<index> <inode> <offset>`. A checkpoint is taken only when every record read before it is
//! written, so a crash between the two repeats at most one poll's worth of lines.

use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// A checkpoint: per source, its inode and offset when it was seen.
pub(super) type Points = Vec<Option<(u64, u64)>>;

/// The file's text.
pub(super) fn encode(points: &Points) -> String {
    points
        .iter()
        .enumerate()
        .filter_map(|(i, p)| p.map(|(ino, off)| format!("{i} {ino} {off}\n")))
        .collect()
}

/// The entries of a checkpoint's text: `(index, inode, offset)`; malformed lines are skipped.
pub(super) fn parse(text: &str) -> Vec<(usize, u64, u64)> {
    text.lines()
        .filter_map(|l| {
            let mut w = l.split(' ');
            let entry = (
                w.next()?.parse().ok()?,
                w.next()?.parse().ok()?,
                w.next()?.parse().ok()?,
            );
            w.next().is_none().then_some(entry)
        })
        .collect()
}

/// The saved checkpoint; none when the file is missing or unreadable.
pub(super) fn load(path: &Path) -> Vec<(usize, u64, u64)> {
    std::fs::read_to_string(path)
        .map(|t| parse(&t))
        .unwrap_or_default()
}

/// Replace the checkpoint in one step (written beside, then renamed).
///
/// # Errors
/// I/O errors writing or renaming.
pub(super) fn save(path: &Path, points: &Points) -> io::Result<()> {
    let tmp = path.with_extension("offsets.tmp");
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    f.write_all(encode(points).as_bytes())?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests;
