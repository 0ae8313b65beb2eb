//! The OCI cache as Tart lays it out on disk (docs/reference/tart-cli.md §1.1): one directory per
//! manifest digest under `$TART_HOME/cache/OCIs/<host>/<repository>/sha256:<hex>/`, and each tag a
//! symlink beside it pointing at its digest directory. A `:port` in the host is stored as `%3A`.
//!
//! [`scan`] reads it without running `tart`, so an agent can account for every cached image
//! (its size, its tags, when it was last used) cheaply. It is blocking file-system work: call it
//! from `spawn_blocking` under a deadline, as `TART_HOME` may sit on a stalled volume.

use std::{
    collections::BTreeMap,
    io,
    path::{Path, PathBuf},
    time::SystemTime,
};

use crate::parse::digest_name;

/// One cached image: a digest directory and the tags that point at it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedImage {
    /// Registry `host[:port]`.
    pub host: String,
    /// Repository path below the host.
    pub repository: String,
    /// `sha256:<hex>`.
    pub digest: String,
    /// Tags whose symlink points at this digest, sorted.
    pub tags: Vec<String>,
    /// Bytes the directory's files take on disk (allocated blocks, so a sparse disk counts
    /// what it really uses).
    pub bytes: u64,
    /// The directory's last access or modification, whichever is later.
    pub accessed: SystemTime,
    /// Pulled by digest: Tart's own GC never removes it.
    pub explicitly_pulled: bool,
    /// Where it is.
    pub path: PathBuf,
}

impl CachedImage {
    /// `host/repository@sha256:<hex>`: the name `tart clone` and `tart delete` take.
    pub fn digest_name(&self) -> String {
        format!("{}/{}@{}", self.host, self.repository, self.digest)
    }

    /// `host/repository:tag` for each tag.
    pub fn tag_names(&self) -> Vec<String> {
        self.tags
            .iter()
            .map(|t| format!("{}/{}:{t}", self.host, self.repository))
            .collect()
    }
}

/// Every cached image under `tart_home`; an absent cache is an empty one.
///
/// # Errors
/// A directory of the cache that exists but cannot be read.
pub fn scan(tart_home: &Path) -> io::Result<Vec<CachedImage>> {
    let root = tart_home.join("cache/OCIs");
    let hosts = match std::fs::read_dir(&root) {
        Ok(h) => h,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut found = Vec::new();
    for host in hosts {
        let host = host?;
        if !host.file_type()?.is_dir() {
            continue;
        }
        let name = host.file_name().to_string_lossy().replace("%3A", ":");
        walk(&host.path(), &name, "", &mut found)?;
    }
    found.sort_by_key(CachedImage::digest_name);
    Ok(found)
}

/// Walk one repository level: digest directories are images, symlinks are tags, other
/// directories are deeper repository path components.
fn walk(dir: &Path, host: &str, repository: &str, out: &mut Vec<CachedImage>) -> io::Result<()> {
    let mut digests: BTreeMap<String, CachedImage> = BTreeMap::new();
    let mut tags: Vec<(String, String)> = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let file_name = entry.file_name().to_string_lossy().into_owned();
        let kind = entry.file_type()?;
        if kind.is_symlink() {
            let target = std::fs::read_link(entry.path())?;
            if let Some(d) = target
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(digest_name)
            {
                tags.push((file_name, d));
            }
        } else if kind.is_dir() {
            if let Some(digest) = digest_name(&file_name) {
                let path = entry.path();
                let meta = entry.metadata()?;
                digests.insert(
                    digest.clone(),
                    CachedImage {
                        host: host.to_owned(),
                        repository: repository.to_owned(),
                        digest,
                        tags: Vec::new(),
                        bytes: allocated_bytes(&path)?,
                        accessed: last_use(&meta),
                        explicitly_pulled: path.join(".explicitly-pulled").exists(),
                        path,
                    },
                );
            } else {
                let deeper = if repository.is_empty() {
                    file_name
                } else {
                    format!("{repository}/{file_name}")
                };
                walk(&entry.path(), host, &deeper, out)?;
            }
        }
    }
    for (tag, digest) in tags {
        if let Some(image) = digests.get_mut(&digest) {
            image.tags.push(tag);
        }
    }
    for mut image in digests.into_values() {
        image.tags.sort();
        out.push(image);
    }
    Ok(())
}

fn last_use(meta: &std::fs::Metadata) -> SystemTime {
    let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
    meta.accessed().map_or(modified, |a| a.max(modified))
}

/// Allocated bytes of the files directly in `dir` (Tart's image directories are flat).
fn allocated_bytes(dir: &Path) -> io::Result<u64> {
    let mut total = 0u64;
    for entry in std::fs::read_dir(dir)? {
        let meta = entry?.metadata()?;
        if meta.is_file() {
            total = total.saturating_add(on_disk(&meta));
        }
    }
    Ok(total)
}

#[cfg(unix)]
fn on_disk(meta: &std::fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt;
    meta.blocks().saturating_mul(512)
}

#[cfg(not(unix))]
fn on_disk(meta: &std::fs::Metadata) -> u64 {
    meta.len()
}

#[cfg(test)]
mod tests;
