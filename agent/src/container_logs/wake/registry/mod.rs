//! Who waits on which files, shared by every waiter of one `LogWatch` (the parent module's): the watched
//! directories (one OS watch each, however many waiters), and per directory the waiters with
//! the file names they follow. A change to one of those files wakes the waiters that follow
//! it; a change to the directory's entries (a file created, renamed, removed: a rotation, a
//! run's end mark) wakes every waiter of the directory. The OS side is behind [`Os`].

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Notify;

/// The OS's key of a watched directory.
pub(crate) type DirKey = i64;

/// The OS's file watch: directories by path, and the names followed in each.
pub(crate) trait Os: Send + Sync {
    /// Watch the directory `dir`. Watching one directory twice may give the same key.
    ///
    /// # Errors
    /// The directory is missing, is not a directory, or no more watches can be made.
    fn watch_dir(&self, dir: &Path) -> io::Result<DirKey>;
    /// Stop watching a directory.
    fn unwatch_dir(&self, key: DirKey);
    /// The names now followed in a watched directory (an OS that watches each file opens
    /// them; one that watches the directory needs nothing).
    fn follow(&self, key: DirKey, dir: &Path, names: &[OsString]);
}

/// What the OS reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Event {
    /// A file in the directory was written (or truncated).
    Content(DirKey, OsString),
    /// The directory's entries changed, or it did itself (renamed).
    Entries(DirKey),
    /// The directory is gone, and so is its watch.
    Gone(DirKey),
    /// Events were lost: anything may have changed.
    #[cfg_attr(
        not(target_os = "linux"),
        allow(dead_code, reason = "only inotify's queue overflows")
    )]
    Overflow,
}

/// One waiter in one directory.
struct Sub {
    id: u64,
    names: Vec<OsString>,
    notify: Arc<Notify>,
    /// Turned false when a directory of the waiter's is gone.
    alive: Arc<AtomicBool>,
}

struct Dir {
    paths: Vec<PathBuf>,
    subs: Vec<Sub>,
}

/// The waiters and their directories.
#[derive(Default)]
pub(crate) struct Registry {
    dirs: HashMap<DirKey, Dir>,
    by_path: HashMap<PathBuf, DirKey>,
    next: u64,
}

/// A waiter's place in the registry: its id and its directories.
#[derive(Debug)]
pub(crate) struct Entry {
    pub id: u64,
    pub keys: Vec<DirKey>,
}

impl Registry {
    /// Add a waiter following `files` (each in its parent directory), woken through `notify`.
    ///
    /// # Errors
    /// A directory could not be watched; nothing is left registered.
    pub(crate) fn add(
        &mut self,
        os: &dyn Os,
        files: &[PathBuf],
        notify: &Arc<Notify>,
        alive: &Arc<AtomicBool>,
    ) -> io::Result<Entry> {
        let id = self.next;
        self.next += 1;
        let mut entry = Entry {
            id,
            keys: Vec::new(),
        };
        for (dir, names) in by_dir(files) {
            let key = match self.key(os, &dir) {
                Ok(k) => k,
                Err(e) => {
                    self.remove(os, &entry);
                    return Err(e);
                }
            };
            let d = self.dirs.entry(key).or_insert_with(|| Dir {
                paths: Vec::new(),
                subs: Vec::new(),
            });
            if !d.paths.contains(&dir) {
                d.paths.push(dir.clone());
            }
            self.by_path.insert(dir, key);
            d.subs.push(Sub {
                id,
                names,
                notify: notify.clone(),
                alive: alive.clone(),
            });
            entry.keys.push(key);
            self.follow(os, key);
        }
        Ok(entry)
    }

    /// Remove a waiter; a directory nobody waits on any more is no longer watched.
    pub(crate) fn remove(&mut self, os: &dyn Os, entry: &Entry) {
        for &key in &entry.keys {
            let Some(d) = self.dirs.get_mut(&key) else {
                continue; // gone meanwhile
            };
            let before = d.subs.len();
            d.subs.retain(|s| s.id != entry.id);
            if d.subs.len() == before {
                continue;
            }
            if d.subs.is_empty() {
                if let Some(d) = self.dirs.remove(&key) {
                    for p in d.paths {
                        self.by_path.remove(&p);
                    }
                }
                os.unwatch_dir(key);
            } else {
                self.follow(os, key);
            }
        }
    }

    /// Wake the waiters `event` concerns.
    pub(crate) fn dispatch(&mut self, event: &Event) {
        match event {
            Event::Content(key, name) => {
                for s in self.dirs.get(key).into_iter().flat_map(|d| &d.subs) {
                    if s.names.contains(name) {
                        s.notify.notify_one();
                    }
                }
            }
            Event::Entries(key) => {
                for s in self.dirs.get(key).into_iter().flat_map(|d| &d.subs) {
                    s.notify.notify_one();
                }
            }
            Event::Gone(key) => {
                if let Some(d) = self.dirs.remove(key) {
                    for p in &d.paths {
                        self.by_path.remove(p);
                    }
                    for s in d.subs {
                        s.alive.store(false, Ordering::Relaxed);
                        s.notify.notify_one();
                    }
                }
            }
            Event::Overflow => {
                for s in self.dirs.values().flat_map(|d| &d.subs) {
                    s.notify.notify_one();
                }
            }
        }
    }

    /// Directories watched.
    #[cfg(test)]
    pub(crate) fn dirs(&self) -> usize {
        self.dirs.len()
    }

    fn key(&mut self, os: &dyn Os, dir: &Path) -> io::Result<DirKey> {
        match self.by_path.get(dir) {
            Some(&k) => Ok(k),
            None => os.watch_dir(dir),
        }
    }

    /// Tell the OS the names now followed in `key`'s directory.
    fn follow(&self, os: &dyn Os, key: DirKey) {
        let Some(d) = self.dirs.get(&key) else {
            return;
        };
        let mut seen = HashSet::new();
        let names: Vec<OsString> = d
            .subs
            .iter()
            .flat_map(|s| s.names.iter())
            .filter(|n| seen.insert(*n))
            .cloned()
            .collect();
        if let Some(p) = d.paths.first() {
            os.follow(key, p, &names);
        }
    }
}

/// `files` grouped by parent directory, in first-seen order.
fn by_dir(files: &[PathBuf]) -> Vec<(PathBuf, Vec<OsString>)> {
    let mut out: Vec<(PathBuf, Vec<OsString>)> = Vec::new();
    for f in files {
        let (Some(dir), Some(name)) = (f.parent(), f.file_name()) else {
            continue;
        };
        match out.iter_mut().find(|(d, _)| d == dir) {
            Some((_, names)) => names.push(name.to_owned()),
            None => out.push((dir.to_owned(), vec![name.to_owned()])),
        }
    }
    out
}

#[cfg(test)]
mod tests;
