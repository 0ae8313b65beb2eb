//! Tart's automatic cache pruning (docs/reference/tart-cli.md §4, `reclaimIfNeeded`): before a pull
//! downloads and after a clone copies, OCI cache entries are deleted, least recently accessed
//! first, until the volume has the room the operation asks for. `TART_NO_AUTO_PRUNE`, present with
//! any value, turns it off. Local VMs are never touched. Nothing is printed.
//!
//! The fake's disks are sparse, so sizes are simulated: a cache entry counts its logical size
//! (a real pulled disk is written out), and the volume's free space is the knob
//! `volume_available_gb` (absent = unlimited, so auto-prune never fires).

use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::Ctx;
use crate::home::{self, GB, Home, MIB};
use crate::info::oci_entries;

/// The variable whose mere presence turns auto-prune off.
pub(crate) const NO_AUTO_PRUNE: &str = "TART_NO_AUTO_PRUNE";
/// Room a pull asks for beyond the uncompressed disk: the VM's other files.
pub(crate) const PULL_EXTRA_BYTES: u64 = 128 * MIB;
/// `clone --prune-limit` default, GiB.
pub(crate) const DEFAULT_PRUNE_LIMIT_GIB: u64 = 100;

/// Bytes a pull of an image with a `disk_gb` disk needs before it downloads.
pub(crate) fn pull_required(disk_gb: u64) -> u64 {
    disk_gb.saturating_mul(GB).saturating_add(PULL_EXTRA_BYTES)
}

/// Bytes a clone reserves afterwards: the source's still-unallocated part, capped at
/// `prune_limit_gib` GiB.
pub(crate) fn clone_required(logical: u64, allocated: u64, prune_limit_gib: u64) -> u64 {
    logical
        .saturating_sub(allocated)
        .min(prune_limit_gib.saturating_mul(1024 * MIB))
}

/// One prunable cache entry: an OCI digest directory.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Prunable {
    pub path: PathBuf,
    pub accessed: SystemTime,
    pub bytes: u64,
}

/// Which entries `reclaimIfNeeded` deletes, in order (pure). Nothing when `required` is below
/// `available`, or when the whole cache (initiator included) is smaller than the shortfall;
/// otherwise least recently accessed first, skipping `initiator`, until strictly more than the
/// shortfall is reclaimed.
pub(crate) fn plan(
    required: u64,
    available: u64,
    mut entries: Vec<Prunable>,
    initiator: Option<&Path>,
) -> Vec<PathBuf> {
    if required < available {
        return Vec::new();
    }
    let shortfall = required - available;
    let cache: u64 = entries.iter().map(|e| e.bytes).sum();
    if cache < shortfall {
        return Vec::new();
    }
    entries.sort_by(|a, b| a.accessed.cmp(&b.accessed).then(a.path.cmp(&b.path)));
    let mut reclaimed = 0u64;
    let mut out = Vec::new();
    for e in entries {
        if reclaimed > shortfall {
            break;
        }
        if Some(e.path.as_path()) == initiator {
            continue;
        }
        reclaimed += e.bytes;
        out.push(e.path);
    }
    out
}

/// Makes room for `required` bytes, never deleting `initiator` (a digest directory).
pub(crate) fn reclaim_if_needed(
    ctx: &Ctx,
    required: u64,
    initiator: Option<&Path>,
) -> std::io::Result<()> {
    if std::env::var_os(NO_AUTO_PRUNE).is_some() {
        return Ok(());
    }
    let Some(gb) = ctx.knobs.volume_available_gb else {
        return Ok(());
    };
    let available = (gb.max(0.0) * GB as f64) as u64;
    let initiator = initiator.and_then(|p| fs::canonicalize(p).ok());
    let doomed = plan(
        required,
        available,
        prunables(&ctx.home),
        initiator.as_deref(),
    );
    if doomed.is_empty() {
        return Ok(());
    }
    for dir in doomed {
        fs::remove_dir_all(dir)?;
    }
    // Tags whose digest directory went are removed with it.
    for (name, path) in oci_entries(&ctx.home) {
        if !name.contains('@') && fs::metadata(&path).is_err() {
            let _ = fs::remove_file(path);
        }
    }
    Ok(())
}

/// The OCI digest directories with their access time and simulated size.
fn prunables(home: &Home) -> Vec<Prunable> {
    oci_entries(home)
        .into_iter()
        .filter(|(n, _)| n.contains('@'))
        .filter_map(|(_, p)| fs::canonicalize(p).ok())
        .map(|path| Prunable {
            accessed: home::accessed(&path),
            bytes: home::dir_sizes(&path).0,
            path,
        })
        .collect()
}

#[cfg(test)]
mod tests;
