//! The per-VM directories on the host: `<guest_dir>/<vm>/{control, status, volumes/<share>}`,
//! every one `0700` (docs/guest.md, "Permissions"), the `--dir` shares that expose them to the
//! guest, and their removal (one VM's, or the orphan sweep). What goes in them is written by
//! `control` and `atomic`.

use std::collections::HashSet;
use std::fs::{self, DirBuilder};
use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use tart::{DirShare, VmName};

use super::model::{PlannedVolume, VolumeContent};

const DIR_MODE: u32 = 0o700;

/// Where each VM's guest files live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GuestLayout {
    root: PathBuf,
}

impl GuestLayout {
    /// A layout under `root` (the `guest_dir` setting).
    pub(crate) fn new(root: PathBuf) -> Self {
        Self { root }
    }

    /// `<root>/<vm>`.
    pub(crate) fn vm_dir(&self, vm: &VmName) -> PathBuf {
        self.root.join(vm.as_str())
    }

    /// The control share's host directory.
    pub(crate) fn control(&self, vm: &VmName) -> PathBuf {
        self.vm_dir(vm).join("control")
    }

    /// The status share's host directory.
    pub(crate) fn status(&self, vm: &VmName) -> PathBuf {
        self.vm_dir(vm).join("status")
    }

    /// One volume share's host directory.
    pub(crate) fn volume(&self, vm: &VmName, share: &str) -> PathBuf {
        self.vm_dir(vm).join("volumes").join(share)
    }

    /// Create the root, the VM directory, an empty `status` and one directory per volume
    /// share, each `0700`; `control` is the control writer's, which builds it beside its place
    /// and renames it in. Existing volume directories keep their content (an `emptyDir`
    /// outlives a restart of the container, as in kubelet); `status` is emptied so the
    /// previous run's exit code is never read as this run's. Nothing is made that the VM does
    /// not use: on this project's test machines each `mkdir` costs more the more inodes were
    /// freed in the last half minute (docs/performance.md, "Agent overhead per Pod").
    ///
    /// # Errors
    /// A VM directory or share that exists as anything but a real directory (a symlink
    /// included) is `PermissionDenied`; other I/O errors pass through.
    pub(crate) fn create(&self, vm: &VmName, volumes: &[PlannedVolume]) -> io::Result<()> {
        if fs::metadata(&self.root).is_err() {
            fs::create_dir_all(&self.root)?;
            fs::set_permissions(&self.root, fs::Permissions::from_mode(DIR_MODE))?;
        }
        let vm_dir = self.vm_dir(vm);
        ensure_dir(&vm_dir)?;
        let status = self.status(vm);
        remove_entry(&status)?;
        ensure_dir(&status)?;
        if !volumes.is_empty() {
            ensure_dir(&vm_dir.join("volumes"))?;
        }
        for v in volumes {
            ensure_dir(&self.volume(vm, &v.share))?;
        }
        Ok(())
    }

    /// The `--dir` shares for `tart run`: `control` read-only, `status` read-write, and one per
    /// volume, read-only for files the agent keeps current, read-write for an `emptyDir`.
    pub(crate) fn shares(&self, vm: &VmName, volumes: &[PlannedVolume]) -> Vec<DirShare> {
        let share = |name: &str, path: PathBuf, read_only: bool| DirShare {
            name: Some(name.to_owned()),
            path,
            read_only,
            tag: None,
        };
        let mut out = vec![
            share("control", self.control(vm), true),
            share("status", self.status(vm), false),
        ];
        for v in volumes {
            let read_only = !matches!(v.content, VolumeContent::EmptyDir);
            out.push(share(&v.share, self.volume(vm, &v.share), read_only));
        }
        out
    }

    /// Remove the VM's directory; missing is fine. A symlink in its place is removed itself,
    /// never followed.
    ///
    /// # Errors
    /// I/O errors other than not-found.
    pub(crate) fn remove(&self, vm: &VmName) -> io::Result<()> {
        remove_entry(&self.vm_dir(vm))
    }

    /// Remove every VM directory under the root whose name starts with `prefix` and is not in
    /// `keep` (the orphan sweep). Returns the names removed, sorted. A missing root removes
    /// nothing.
    ///
    /// # Errors
    /// I/O errors reading the root or removing an entry.
    pub(crate) fn sweep(&self, prefix: &str, keep: &HashSet<String>) -> io::Result<Vec<String>> {
        let entries = match fs::read_dir(&self.root) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut removed = Vec::new();
        for entry in entries {
            let entry = entry?;
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            if name.starts_with(prefix) && !keep.contains(&name) {
                remove_entry(&entry.path())?;
                removed.push(name);
            }
        }
        removed.sort();
        Ok(removed)
    }
}

/// Make `path` a real `0700` directory: create it, or check the existing one is not a symlink.
fn ensure_dir(path: &Path) -> io::Result<()> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_dir() => {}
        Ok(_) => {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("{} is not a directory (or is a symlink)", path.display()),
            ));
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            DirBuilder::new().mode(DIR_MODE).create(path)?;
        }
        Err(e) => return Err(e),
    }
    fs::set_permissions(path, fs::Permissions::from_mode(DIR_MODE))
}

/// Remove a directory tree, or a file or symlink, without following symlinks; missing is fine.
fn remove_entry(path: &Path) -> io::Result<()> {
    let result = match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_dir() => fs::remove_dir_all(path),
        Ok(_) => fs::remove_file(path),
        Err(e) => Err(e),
    };
    match result {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests;
