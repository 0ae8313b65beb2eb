//! Where a Pod's container logs live, kubelet's layout:
//! `<root>/<namespace>_<pod>_<uid>/<container>/<restart>.log` (the Pod's name cut short when
//! the three would pass a file name's 255 bytes), rotated files beside it as
//! `<restart>.log.<YYYYMMDD-HHMMSS>` (a `-<n>` suffix when two rotations fall in one second),
//! `<restart>.ended` once the collector of that run has written its last line, and
//! `<restart>.offsets`, how far the collector has read its sources. Naming and
//! listing only; the collector writes these files and the reader reads them.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use k8s_openapi::jiff::{Timestamp, tz::Offset};

use super::error::LogError;

/// The Pod a log belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct PodLogId {
    pub namespace: String,
    pub name: String,
    pub uid: String,
}

impl PodLogId {
    /// `<namespace>_<pod>_<uid>`, the Pod's directory under the log root. Kubernetes allows
    /// 63 + 253 + 36 bytes, more than a file name holds (255 bytes on APFS and ext4): then the
    /// Pod's name is cut to fit. The UID alone is unique, so the cut name is too.
    ///
    /// # Errors
    /// `InvalidName` when a part is empty, `.` or `..`, or holds `/` or NUL, so a name from a
    /// request can never reach outside the root.
    pub(crate) fn dir(&self, root: &Path) -> Result<PathBuf, LogError> {
        for part in [&self.namespace, &self.name, &self.uid] {
            check_component(part)?;
        }
        let fixed = self.namespace.len() + self.uid.len() + 2;
        let mut keep = NAME_MAX.saturating_sub(fixed).min(self.name.len());
        while !self.name.is_char_boundary(keep) {
            keep -= 1;
        }
        let name = &self.name[..keep];
        if name.is_empty() || fixed > NAME_MAX {
            return Err(LogError::InvalidName(self.name.clone()));
        }
        Ok(root.join(format!("{}_{name}_{}", self.namespace, self.uid)))
    }

    /// The container's directory.
    ///
    /// # Errors
    /// As [`PodLogId::dir`], for the container name too.
    pub(crate) fn container_dir(&self, root: &Path, container: &str) -> Result<PathBuf, LogError> {
        check_component(container)?;
        Ok(self.dir(root)?.join(container))
    }
}

/// The longest file name, in bytes, on the file systems the agent runs on (APFS, ext4).
const NAME_MAX: usize = 255;

fn check_component(s: &str) -> Result<(), LogError> {
    let bad = s.is_empty() || s == "." || s == ".." || s.contains(['/', '\0']);
    if bad {
        return Err(LogError::InvalidName(s.to_owned()));
    }
    Ok(())
}

/// `<restart>.log`.
pub(crate) fn current_name(restart: u32) -> String {
    format!("{restart}.log")
}

/// `<restart>.ended`.
pub(crate) fn ended_name(restart: u32) -> String {
    format!("{restart}.ended")
}

/// `<restart>.offsets`.
pub(crate) fn offsets_name(restart: u32) -> String {
    format!("{restart}.offsets")
}

/// `<restart>.log.<YYYYMMDD-HHMMSS>` (UTC), with `-<seq>` when `seq` > 0.
pub(crate) fn rotated_name(restart: u32, now: Timestamp, seq: u32) -> String {
    let t = Offset::UTC.to_datetime(now);
    let stamp = format!(
        "{:04}{:02}{:02}-{:02}{:02}{:02}",
        t.year(),
        t.month(),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    );
    match seq {
        0 => format!("{restart}.log.{stamp}"),
        n => format!("{restart}.log.{stamp}-{n}"),
    }
}

/// What a file in a container's directory is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FileKind {
    Current(u32),
    /// A rotated file: its run and its order among that run's rotated files.
    Rotated(u32, (String, u32)),
    Ended(u32),
    Offsets(u32),
}

/// Classify a file name; `None` for names this module never writes.
pub(crate) fn classify(name: &str) -> Option<FileKind> {
    let (run, rest) = name.split_once('.')?;
    let run: u32 = run
        .parse()
        .ok()
        .filter(|_| run.bytes().all(|b| b.is_ascii_digit()))?;
    match rest {
        "log" => Some(FileKind::Current(run)),
        "ended" => Some(FileKind::Ended(run)),
        "offsets" => Some(FileKind::Offsets(run)),
        _ => {
            let stamp = rest.strip_prefix("log.")?;
            let base = stamp.get(..15).filter(|b| is_stamp(b))?;
            let seq = match &stamp[15..] {
                "" => 0,
                tail => tail.strip_prefix('-')?.parse().ok()?,
            };
            Some(FileKind::Rotated(run, (base.to_owned(), seq)))
        }
    }
}

/// `YYYYMMDD-HHMMSS`.
fn is_stamp(s: &str) -> bool {
    s.bytes().enumerate().all(|(i, b)| {
        if i == 8 {
            b == b'-'
        } else {
            b.is_ascii_digit()
        }
    })
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RunFiles {
    /// Rotated files, oldest first.
    pub rotated: Vec<PathBuf>,
    /// `<restart>.log` exists.
    pub current: bool,
    /// `<restart>.ended` exists.
    pub ended: bool,
}

/// Every run found in a container's directory, by restart number. A missing directory has
/// none.
///
/// # Errors
/// I/O errors reading the directory.
pub(crate) fn list(dir: &Path) -> io::Result<BTreeMap<u32, RunFiles>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => return Err(e),
    };
    let mut runs: BTreeMap<u32, RunFiles> = BTreeMap::new();
    let mut rotated = Vec::new();
    for entry in entries {
        let entry = entry?;
        let Some(kind) = entry.file_name().to_str().and_then(classify) else {
            continue;
        };
        match kind {
            FileKind::Current(n) => runs.entry(n).or_default().current = true,
            FileKind::Ended(n) => runs.entry(n).or_default().ended = true,
            FileKind::Rotated(n, key) => rotated.push((n, key, entry.path())),
            FileKind::Offsets(_) => {}
        }
    }
    rotated.sort();
    for (n, _, path) in rotated {
        runs.entry(n).or_default().rotated.push(path);
    }
    Ok(runs)
}

/// Remove a Pod's whole log directory; missing is fine.
///
/// # Errors
/// `InvalidName` for a bad identity; I/O errors other than not-found.
pub(crate) fn remove_pod_logs(root: &Path, pod: &PodLogId) -> Result<(), LogError> {
    let dir = pod.dir(root)?;
    match std::fs::remove_dir_all(&dir) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(LogError::Io {
            path: dir,
            source: e,
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests;
