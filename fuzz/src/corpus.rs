//! The committed corpus (`fuzz/corpus/<target>/`: inputs found by runs, kept as regression
//! cases) and the files a run writes for its findings.

use std::{
    io,
    path::{Path, PathBuf},
};

use crate::runner::Finding;

/// `fuzz/corpus` in this repository.
pub fn committed_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus")
}

/// The files of `<dir>/<target>/`, in name order; none when it does not exist.
///
/// # Errors
/// A read error other than not-found.
pub fn load(dir: &Path, target: &str) -> io::Result<Vec<Vec<u8>>> {
    let mut paths: Vec<PathBuf> = match std::fs::read_dir(dir.join(target)) {
        Ok(entries) => entries
            .map(|e| e.map(|e| e.path()))
            .collect::<io::Result<_>>()?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    paths.sort();
    paths.iter().map(std::fs::read).collect()
}

/// Writes `finding`'s input as `<dir>/<target>/<kind>-<hash>` and returns the path.
///
/// # Errors
/// The write error.
pub fn write(dir: &Path, target: &str, finding: &Finding) -> io::Result<PathBuf> {
    let sub = dir.join(target);
    std::fs::create_dir_all(&sub)?;
    let path = sub.join(format!(
        "{}-{:016x}",
        finding.kind.as_str(),
        fnv1a(&finding.input)
    ));
    std::fs::write(&path, &finding.input)?;
    Ok(path)
}

/// FNV-1a, 64-bit: a stable file name for an input.
fn fnv1a(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}
