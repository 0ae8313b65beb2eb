//! Pure: whether a configured path may be removed by the purge — never one that could hold
//! what is not the agent's (`/`, `$HOME`, `TART_HOME`, a shared directory, a kept file).

use std::path::{Component, Path, PathBuf};

use super::model::{Item, Kept, Removal};

/// Directories shared with other software, under the home and absolute.
const SHARED_IN_HOME: &[&str] = &[
    "Library",
    "Library/Logs",
    "Library/Caches",
    "Library/Application Support",
    "Library/LaunchAgents",
    "Library/Preferences",
    "Documents",
    "Desktop",
    "Downloads",
    ".kube",
    ".ssh",
    ".config",
    ".cache",
    ".local",
];
const SHARED: &[&str] = &[
    "/usr/local",
    "/usr/local/etc",
    "/usr/local/var",
    "/usr/local/var/log",
    "/opt/homebrew",
    "/opt/homebrew/etc",
    "/opt/homebrew/var",
    "/opt/homebrew/var/log",
    "/private/etc",
    "/private/tmp",
    "/private/var",
    "/var/log",
    "/var/tmp",
    "/Library/Logs",
    "/Library/Caches",
    "/Library/LaunchAgents",
    "/Library/LaunchDaemons",
    "/Library/Application Support",
    "/System/Volumes",
    "/System/Volumes/Data",
    "/Users/Shared",
];

/// Why `r` must not be removed, if it must not.
pub(super) fn refusal(
    item: Item,
    r: &Removal,
    home: &Path,
    tart_home: &Path,
    keep: &[(Kept, PathBuf)],
) -> Option<String> {
    let p = r.path();
    if !p.is_absolute() {
        return Some("is not an absolute path".into());
    }
    if p.components()
        .any(|c| matches!(c, Component::ParentDir | Component::CurDir))
    {
        return Some("has `.` or `..` components".into());
    }
    match r {
        // The cache lives inside TART_HOME by definition.
        Removal::Dir(_) if item == Item::ImageCache => dir_refusal(p, home, None, keep),
        Removal::Dir(_) => dir_refusal(p, home, Some(tart_home), keep),
        // Named files only; a directory among them fails to be removed as a file.
        Removal::File(_) | Removal::RotatedFile(_) | Removal::FilesIn(..) => None,
    }
}

/// Why the directory `p` must not be removed with all it holds, if it must not.
pub(super) fn dir_refusal(
    p: &Path,
    home: &Path,
    tart_home: Option<&Path>,
    keep: &[(Kept, PathBuf)],
) -> Option<String> {
    if p.components().count() < 3 {
        return Some("is `/` or a top-level directory".into());
    }
    if home.starts_with(p) {
        return Some(format!("is $HOME ({}) or contains it", home.display()));
    }
    if let Some(t) = tart_home.filter(|t| t.starts_with(p)) {
        return Some(format!(
            "is TART_HOME ({}) or contains it: it holds VMs the agent did not create",
            t.display()
        ));
    }
    let shared = SHARED.iter().map(PathBuf::from);
    if shared
        .chain(SHARED_IN_HOME.iter().map(|s| home.join(s)))
        .any(|s| s == p)
    {
        return Some("is a directory shared with other software".into());
    }
    keep.iter()
        .find(|(_, f)| f.starts_with(p))
        .map(|(k, f)| format!("holds the {} {}", k.as_str(), f.display()))
}
