//! `tart run --dir` values (docs/reference/tart-cli.md §2.6): `[name:]path[:options]`, where the
//! options are the last `:`-separated segment, comma-separated `ro` and `tag=TAG`. Pure parsing and
//! the per-tag naming rule; `vm.rs` records the result and `guest_mode.rs` builds the guest's view
//! of it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::Failure;

/// The tag macOS guests automount at `/Volumes/My Shared Files` (docs/reference/tart-cli.md §2.6).
pub(crate) const AUTOMOUNT_TAG: &str = "com.apple.virtio-fs.automount";

/// One parsed `--dir` share, as recorded in the run record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Share {
    pub name: Option<String>,
    /// Host path: `~` expanded, relative paths resolved against the working directory.
    pub path: PathBuf,
    pub read_only: bool,
    pub tag: String,
}

/// Every share of one `run`; several shares under one tag must all be named.
pub(crate) fn parse_all(specs: &[String], cwd: &Path) -> Result<Vec<Share>, Failure> {
    let shares = specs
        .iter()
        .map(|s| parse(s, cwd))
        .collect::<Result<Vec<_>, _>>()?;
    let mut by_tag: BTreeMap<&str, Vec<&Share>> = BTreeMap::new();
    for s in &shares {
        by_tag.entry(&s.tag).or_default().push(s);
    }
    for group in by_tag.values().filter(|g| g.len() > 1) {
        if group.iter().any(|s| s.name.is_none()) {
            return Err(syntax(
                "for multiple directory shares each one of them should be named",
            ));
        }
        let mut seen = std::collections::BTreeSet::new();
        for s in group {
            let name = s.name.as_deref().unwrap_or_default();
            if !seen.insert(name) {
                return Err(syntax(&format!(
                    "duplicate directory share name \"{name}\""
                )));
            }
        }
    }
    Ok(shares)
}

fn syntax(detail: &str) -> Failure {
    Failure::validation(format!("invalid --dir syntax: {detail}"))
}

/// One `--dir` value.
pub(crate) fn parse(spec: &str, cwd: &Path) -> Result<Share, Failure> {
    if spec.starts_with("http://") || spec.starts_with("https://") {
        return Err(Failure::other(
            "fake-tart: --dir archives downloaded over http(s) are not emulated",
        ));
    }
    let mut segs: Vec<&str> = spec.split(':').collect();
    let mut read_only = false;
    let mut tag = AUTOMOUNT_TAG.to_string();
    let last = segs.last().copied().unwrap_or_default();
    // With three segments the last must be options; with two it is options only when every
    // comma-separated item is one, otherwise the value is `name:path`.
    let is_options = segs.len() == 3 || (segs.len() == 2 && options(last).is_ok());
    if is_options {
        (read_only, tag) = options(last)?;
        segs.pop();
    }
    let (name, path) = match segs.as_slice() {
        [path] => (None, *path),
        [name, path] => (Some(*name), *path),
        _ => return Err(syntax(&format!("too many ':' in \"{spec}\""))),
    };
    if name == Some("") {
        return Err(syntax("empty directory share name"));
    }
    if name.is_some_and(|n| n.contains([',', '/'])) {
        return Err(syntax(&format!(
            "invalid directory share name \"{}\"",
            name.unwrap_or_default()
        )));
    }
    if path.is_empty() {
        return Err(syntax("empty directory share path"));
    }
    Ok(Share {
        name: name.map(str::to_owned),
        path: resolve(path, cwd),
        read_only,
        tag,
    })
}

/// `ro` and `tag=TAG`, comma-separated; anything else is not an options segment.
fn options(seg: &str) -> Result<(bool, String), Failure> {
    let mut read_only = false;
    let mut tag = AUTOMOUNT_TAG.to_string();
    for item in seg.split(',') {
        match item {
            "ro" => read_only = true,
            _ => match item.strip_prefix("tag=") {
                Some("") => return Err(syntax("empty mount tag")),
                Some(t) => tag = t.to_owned(),
                None => return Err(syntax(&format!("unknown option \"{item}\""))),
            },
        }
    }
    Ok((read_only, tag))
}

fn resolve(path: &str, cwd: &Path) -> PathBuf {
    if let (Some(rest), Some(home)) = (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        return PathBuf::from(home).join(rest);
    }
    cwd.join(path)
}

#[cfg(test)]
mod tests;
