//! Writes the control share (docs/guest.md, "The control share"): one file per value holding
//! exactly its bytes, lists as directories of files `0`, `1`, …. What goes in it is decided by
//! `prepare`; where it lives, by `layout`.
//!
//! The share is built in a fresh sibling directory and renamed into place, so at any instant
//! the path holds either the previous complete share, nothing (for the instant between moving
//! the old one aside and renaming the new one in), or the new complete share — never a
//! half-written one. The launcher reads it only after `tart run` starts, which follows this
//! write.

use std::fs::{self, DirBuilder, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use super::model::ControlSpec;

/// The control format's version (`version`).
const VERSION: &[u8] = b"1";
const DIR_MODE: u32 = 0o700;
const FILE_MODE: u32 = 0o600;

/// Replace the control share at `dir` with `spec`'s content.
///
/// # Errors
/// An env name that is empty or holds `=` or NUL, or any value holding NUL, is `InvalidInput`
/// (the launcher could not carry it); `dir` existing as anything but a real directory is
/// `PermissionDenied`; other I/O errors pass through. On error the previous share is left in
/// place.
pub(crate) fn write_control(dir: &Path, spec: &ControlSpec) -> io::Result<()> {
    check(spec)?;
    let (parent, name) = match (dir.parent(), dir.file_name().and_then(|n| n.to_str())) {
        (Some(parent), Some(name)) => (parent, name),
        _ => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "control share path has no parent",
            ));
        }
    };
    let stamp = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    let fresh = parent.join(format!(".{name}.new-{stamp}"));
    let aside = parent.join(format!(".{name}.old-{stamp}"));
    if let Err(e) = build(&fresh, spec) {
        let _ = fs::remove_dir_all(&fresh);
        return Err(e);
    }
    match fs::symlink_metadata(dir) {
        Ok(meta) if meta.file_type().is_dir() => fs::rename(dir, &aside)?,
        Ok(_) => {
            let _ = fs::remove_dir_all(&fresh);
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{} is not a directory (or is a symlink); not replacing it",
                    dir.display()
                ),
            ));
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    if let Err(e) = fs::rename(&fresh, dir) {
        let _ = fs::rename(&aside, dir);
        let _ = fs::remove_dir_all(&fresh);
        return Err(e);
    }
    if fs::symlink_metadata(&aside).is_ok() {
        fs::remove_dir_all(&aside)?;
    }
    Ok(())
}

fn invalid(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, what)
}

/// Refuse what the launcher cannot carry; messages name the variable, never a value.
fn check(spec: &ControlSpec) -> io::Result<()> {
    for (name, value) in &spec.env {
        if name.is_empty() || name.contains(['=', '\0']) {
            return Err(invalid(format!(
                "environment variable name {name:?} is empty or holds '=' or NUL"
            )));
        }
        if value.contains(&0) {
            return Err(invalid(format!(
                "environment variable {name} holds a NUL byte"
            )));
        }
    }
    let strings = spec
        .command
        .iter()
        .chain(&spec.args)
        .chain(&spec.workdir)
        .chain(&spec.user)
        .chain(&spec.termination_message_path);
    let mounts = spec
        .mounts
        .iter()
        .flat_map(|m| [&m.share, &m.path].into_iter().chain(&m.sub));
    if strings.chain(mounts).any(|s| s.contains('\0')) {
        return Err(invalid(
            "a command, argument, working directory, user or mount holds a NUL byte".into(),
        ));
    }
    Ok(())
}

/// Write every file of the share under `root`, which must not exist yet.
fn build(root: &Path, spec: &ControlSpec) -> io::Result<()> {
    make_dir(root)?;
    write(&root.join("version"), VERSION)?;
    let env = spec.env.iter().map(|(name, value)| {
        let mut pair = Vec::with_capacity(name.len() + 1 + value.len());
        pair.extend_from_slice(name.as_bytes());
        pair.push(b'=');
        pair.extend_from_slice(value);
        pair
    });
    write_list(&root.join("env"), env)?;
    write_list(
        &root.join("command"),
        spec.command.iter().map(|s| s.as_bytes().to_vec()),
    )?;
    write_list(
        &root.join("args"),
        spec.args.iter().map(|s| s.as_bytes().to_vec()),
    )?;
    if let Some(workdir) = &spec.workdir {
        write(&root.join("workdir"), workdir.as_bytes())?;
    }
    if let Some(user) = &spec.user {
        write(&root.join("user"), user.as_bytes())?;
    }
    if let Some(path) = &spec.termination_message_path {
        write(&root.join("termination_message_path"), path.as_bytes())?;
    }
    if let Some(mode) = spec.stdin.as_str() {
        write(&root.join("stdin"), mode.as_bytes())?;
    }
    if !spec.mounts.is_empty() {
        make_dir(&root.join("mounts"))?;
    }
    for (i, mount) in spec.mounts.iter().enumerate() {
        let dir: PathBuf = root.join("mounts").join(i.to_string());
        make_dir(&dir)?;
        write(&dir.join("share"), mount.share.as_bytes())?;
        write(&dir.join("path"), mount.path.as_bytes())?;
        if let Some(sub) = &mount.sub {
            write(&dir.join("sub"), sub.as_bytes())?;
        }
    }
    Ok(())
}

/// A list directory (`0`, `1`, …); not created when the list is empty.
fn write_list(dir: &Path, values: impl ExactSizeIterator<Item = Vec<u8>>) -> io::Result<()> {
    if values.len() == 0 {
        return Ok(());
    }
    make_dir(dir)?;
    for (i, value) in values.enumerate() {
        write(&dir.join(i.to_string()), &value)?;
    }
    Ok(())
}

fn make_dir(path: &Path) -> io::Result<()> {
    DirBuilder::new().mode(DIR_MODE).create(path)?;
    fs::set_permissions(path, fs::Permissions::from_mode(DIR_MODE))
}

fn write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(FILE_MODE)
        .open(path)?;
    file.write_all(bytes)?;
    file.set_permissions(fs::Permissions::from_mode(FILE_MODE))
}

#[cfg(test)]
mod tests;
