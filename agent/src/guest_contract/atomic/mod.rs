//! Kubelet's AtomicWriter for a volume directory on the host: the files live in a timestamped
//! directory `..<stamp>`, `..data` is a symlink to it, and each top-level entry `name` is a
//! symlink `name -> ..data/name`. An update writes a new timestamped directory and swaps
//! `..data` by renaming a temporary symlink over it, so a reader going through `name` sees
//! either the old files or the new ones, never a mix. Synchronous `std::fs`: callers run it on
//! a blocking thread. What the files are is `volumes`'s business; where the directory
//! is, `layout`'s.
//!
//! The writer never follows a symlink it did not create: the volume directory itself must be a
//! real directory, and an entry that this writer would not have made (a top-level symlink
//! pointing elsewhere, a file where a link belongs, a `..data` that is not a link to a
//! timestamped directory) is refused rather than replaced or read through.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, DirBuilder, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// Files by relative path: `(bytes, mode)`.
type Tree = BTreeMap<String, (Vec<u8>, u32)>;

/// The symlink to the current timestamped directory.
const DATA: &str = "..data";
/// The symlink renamed over [`DATA`].
const DATA_TMP: &str = "..data_tmp";
/// Directories inside a volume: traversable by the guest's users, as kubelet makes them.
const DIR_MODE: u32 = 0o755;

/// Make `dir` hold exactly `files` (`(relative path, bytes, mode)`), atomically.
/// Returns whether anything changed: identical content and modes write nothing.
///
/// # Errors
/// An invalid path (empty, absolute, `.`/`..`/empty component, a first component starting with
/// `..`, duplicates, a file that is also a directory) is `InvalidInput`; a `dir` that is not a
/// real directory, or an entry in it this writer did not create, is `PermissionDenied`; other
/// I/O errors pass through.
pub(crate) fn write_atomic(dir: &Path, files: &[(String, Vec<u8>, u32)]) -> io::Result<bool> {
    let wanted = check_files(files)?;
    let meta = fs::symlink_metadata(dir)?;
    if !meta.file_type().is_dir() {
        return Err(refused(dir, "is not a directory (or is a symlink)"));
    }
    let state = inspect(dir)?;
    let tmp = dir.join(DATA_TMP);
    if state.has_tmp {
        // Left by an interrupted swap.
        fs::remove_file(&tmp)?;
    }
    let current_matches = match &state.current {
        Some(stamp) => read_tree(&dir.join(stamp))?.as_ref() == Some(&wanted),
        None => false,
    };
    let mut changed = false;
    let mut current = state.current.clone();
    if !current_matches {
        let stamp = new_stamp_dir(dir)?;
        for (path, (bytes, mode)) in &wanted {
            write_file(&dir.join(&stamp), path, bytes, *mode)?;
        }
        symlink(&stamp, &tmp)?;
        fs::rename(&tmp, dir.join(DATA))?;
        current = Some(stamp);
        changed = true;
    }
    let top: BTreeSet<&str> = wanted
        .keys()
        .map(|p| p.split('/').next().unwrap_or(p))
        .collect();
    for name in &top {
        if !state.links.contains(*name) {
            symlink(Path::new(DATA).join(name), dir.join(name))?;
            changed = true;
        }
    }
    for name in state.links.iter().filter(|n| !top.contains(n.as_str())) {
        fs::remove_file(dir.join(name))?;
        changed = true;
    }
    for stamp in state.stamps.iter().filter(|s| Some(*s) != current.as_ref()) {
        fs::remove_dir_all(dir.join(stamp))?;
    }
    Ok(changed)
}

fn refused(path: &Path, why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!(
            "refusing to write volume files: {} {why}; it was not created by the agent",
            path.display()
        ),
    )
}

fn invalid(path: &str, why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("invalid volume file path {path:?}: {why}"),
    )
}

/// The files by path, after checking every path stays inside the volume and nothing collides.
fn check_files(files: &[(String, Vec<u8>, u32)]) -> io::Result<Tree> {
    let mut wanted = BTreeMap::new();
    for (path, bytes, mode) in files {
        if path.is_empty() || path.starts_with('/') {
            return Err(invalid(path, "must be a non-empty relative path"));
        }
        if path
            .split('/')
            .any(|c| c.is_empty() || c == "." || c == "..")
        {
            return Err(invalid(
                path,
                "must not have an empty, '.' or '..' component",
            ));
        }
        if path.starts_with("..") || path.contains('\0') {
            return Err(invalid(path, "must not start with '..' or contain NUL"));
        }
        if wanted
            .insert(path.clone(), (bytes.clone(), mode & 0o7777))
            .is_some()
        {
            return Err(invalid(path, "is given twice"));
        }
    }
    for path in wanted.keys() {
        let mut parent = path.as_str();
        while let Some((dir, _)) = parent.rsplit_once('/') {
            if wanted.contains_key(dir) {
                return Err(invalid(dir, "is both a file and a directory"));
            }
            parent = dir;
        }
    }
    Ok(wanted)
}

/// What a volume directory holds, checked entry by entry (never followed).
struct State {
    /// The timestamped directory `..data` points at.
    current: Option<String>,
    /// Every timestamped directory present (the current one and leftovers).
    stamps: BTreeSet<String>,
    /// Top-level symlinks `name -> ..data/name`.
    links: BTreeSet<String>,
    /// A leftover `..data_tmp` symlink.
    has_tmp: bool,
}

fn inspect(dir: &Path) -> io::Result<State> {
    let mut state = State {
        current: None,
        stamps: BTreeSet::new(),
        links: BTreeSet::new(),
        has_tmp: false,
    };
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            return Err(refused(&path, "has a name that is not UTF-8"));
        };
        let kind = entry.file_type()?;
        let target = if kind.is_symlink() {
            Some(fs::read_link(&path)?)
        } else {
            None
        };
        match name.as_str() {
            DATA | DATA_TMP => {
                let stamp = target
                    .as_deref()
                    .and_then(Path::to_str)
                    .filter(|t| is_stamp(t))
                    .ok_or_else(|| refused(&path, "is not a link to a timestamped directory"))?;
                if name == DATA {
                    state.current = Some(stamp.to_owned());
                } else {
                    state.has_tmp = true;
                }
            }
            n if is_stamp(n) => {
                if !kind.is_dir() {
                    return Err(refused(&path, "is not a directory"));
                }
                state.stamps.insert(name);
            }
            _ => {
                if target.as_deref() != Some(&Path::new(DATA).join(&name)) {
                    return Err(refused(&path, "is not a link into ..data"));
                }
                state.links.insert(name);
            }
        }
    }
    if let Some(current) = &state.current
        && !state.stamps.contains(current)
    {
        // A dangling `..data`: treated as no content, so the next write replaces it.
        state.current = None;
    }
    Ok(state)
}

/// `..<anything>` other than the two symlink names, with no `/`.
fn is_stamp(name: &str) -> bool {
    name.len() > 2
        && name.starts_with("..")
        && name != DATA
        && name != DATA_TMP
        && !name.contains('/')
}

/// The files under `root` by relative path; `None` when it holds something this writer does not
/// write (a symlink, a device), so the caller rewrites instead of comparing.
fn read_tree(root: &Path) -> io::Result<Option<Tree>> {
    let mut out = BTreeMap::new();
    let mut pending = vec![(root.to_path_buf(), String::new())];
    while let Some((dir, prefix)) = pending.pop() {
        for entry in fs::read_dir(&dir)? {
            let entry = entry?;
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                return Ok(None);
            };
            let rel = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            };
            let kind = entry.file_type()?;
            if kind.is_dir() {
                pending.push((entry.path(), rel));
            } else if kind.is_file() {
                let opened = OpenOptions::new()
                    .read(true)
                    .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
                    .open(entry.path());
                let mut file = match opened {
                    Ok(file) => file,
                    // A mode without owner read (0o000, 0o200): rewrite rather than compare.
                    Err(e) if e.kind() == io::ErrorKind::PermissionDenied => return Ok(None),
                    Err(e) => return Err(e),
                };
                let mode = file.metadata()?.permissions().mode() & 0o7777;
                let mut bytes = Vec::new();
                file.read_to_end(&mut bytes)?;
                out.insert(rel, (bytes, mode));
            } else {
                return Ok(None);
            }
        }
    }
    Ok(Some(out))
}

/// Create a fresh `..<seconds>.<nanoseconds>` directory (0755) in `dir`; its name.
fn new_stamp_dir(dir: &Path) -> io::Result<String> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    for extra in 0u32.. {
        let name = format!("..{}.{:09}{extra}", now.as_secs(), now.subsec_nanos());
        match DirBuilder::new().mode(DIR_MODE).create(dir.join(&name)) {
            Ok(()) => {
                fs::set_permissions(dir.join(&name), fs::Permissions::from_mode(DIR_MODE))?;
                return Ok(name);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    unreachable!("u32 ran out of suffixes")
}

/// Write one file (and its parent directories, 0755) inside a fresh timestamped directory.
fn write_file(stamp: &Path, rel: &str, bytes: &[u8], mode: u32) -> io::Result<()> {
    let path: PathBuf = stamp.join(rel);
    let mut parent = stamp.to_path_buf();
    for component in rel
        .split('/')
        .collect::<Vec<_>>()
        .split_last()
        .map_or(&[][..], |(_, d)| d)
    {
        parent.push(component);
        match DirBuilder::new().mode(DIR_MODE).create(&parent) {
            Ok(()) => fs::set_permissions(&parent, fs::Permissions::from_mode(DIR_MODE))?,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)?;
    file.write_all(bytes)?;
    // The mode is set after the write (the umask would have masked it at creation).
    file.set_permissions(fs::Permissions::from_mode(mode))?;
    Ok(())
}

#[cfg(test)]
mod tests;
