//! The registry bandwidth shared by every simulated Mac whose knobs name the same
//! `registry_dir`: each downloading `pull` keeps an entry file there, flocked for as long as it
//! downloads, and at each simulated second takes `registry_mb_per_s / active pulls` (capped by
//! its own `pull_mb_per_s`). A pull that dies — SIGKILL included — loses its flock with its
//! process, so its entry stops counting at once and the next count removes it.
//!
//! Compiled into both the `fake-tart` binary and `tart_kubelet_tests::fake`, so the sandbox and
//! the tests count active pulls exactly as fake-tart does. The rate itself is pure
//! ([`rate_mb_per_s`]); the rest is file I/O on the shared directory.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};

/// Prefix of an active pull's entry; a name starting with `.` is one being created.
const ENTRY_PREFIX: &str = "pull-";

/// One active pull's place in the shared registry: the entry stays flocked until this is
/// dropped, which removes it.
#[derive(Debug)]
pub struct Registration {
    path: PathBuf,
    _lock: Flock<File>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

/// Registers an active pull in `dir` (created if missing). The entry is locked under a hidden
/// name and only then renamed into place, so a concurrent count never takes a fresh entry for
/// a dead one.
pub fn register(dir: &Path) -> io::Result<Registration> {
    fs::create_dir_all(dir)?;
    let name = format!(
        "{ENTRY_PREFIX}{}-{:016x}",
        std::process::id(),
        rand::random::<u64>()
    );
    let hidden = dir.join(format!(".{name}"));
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&hidden)?;
    let lock = Flock::lock(file, FlockArg::LockExclusiveNonblock).map_err(|(_, e)| e)?;
    let path = dir.join(name);
    fs::rename(&hidden, &path)?;
    Ok(Registration { path, _lock: lock })
}

/// The pulls downloading now through `dir`: entries whose flock some live process holds. An
/// entry nobody holds belonged to a dead pull and is removed. A missing directory counts none.
pub fn active_pulls(dir: &Path) -> usize {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    let mut active = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.to_string_lossy().starts_with(ENTRY_PREFIX) {
            continue;
        }
        let path = entry.path();
        // Opened separately, so even this process's own entry conflicts (flock is per open
        // file description).
        let Ok(file) = File::open(&path) else {
            continue;
        };
        match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(stale) => {
                let _ = fs::remove_file(&path);
                drop(stale);
            }
            Err((_, nix::errno::Errno::EWOULDBLOCK)) => active += 1,
            Err(_) => {}
        }
    }
    active
}

/// One pull's download rate, MB per simulated second: its own `per_mac` speed, or its share
/// of the registry's `shared` bandwidth among `active` pulls (itself included) when that is
/// less. Without a shared bandwidth, or with no pull counted, the Mac's own speed.
pub fn rate_mb_per_s(per_mac: f64, shared: Option<f64>, active: usize) -> f64 {
    match shared {
        Some(total) if active > 0 => per_mac.min(total / active as f64),
        _ => per_mac,
    }
}

#[cfg(test)]
mod tests;
