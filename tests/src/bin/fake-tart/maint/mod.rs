//! The commands that change things at rest (docs/reference/tart-cli.md §2.3, §2.9, §2.12, §1.1):
//! `set`, `delete`, `prune` and the OCI cache GC (untagged digests go unless `.explicitly-pulled`).

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::Ctx;
use crate::cli::Parsed;
use crate::error::Failure;
use crate::home::{self, GB, Home, MIB, VmConfig};
use crate::info::{oci_entries, vm_state};
use crate::locks;
use crate::registry::{Remote, is_remote};

// === set ===

fn parse_display(v: &str) -> Option<(u32, u32, Option<String>)> {
    let (dims, unit) = match v.strip_suffix("pt").or_else(|| v.strip_suffix("px")) {
        Some(d) => (d, Some(v[d.len()..].to_string())),
        None => (v, None),
    };
    let (w, h) = dims.split_once('x').unwrap_or((dims, ""));
    let num = |s: &str| {
        if s.is_empty() {
            Some(0)
        } else {
            s.parse::<u32>().ok()
        }
    };
    Some((num(w)?, num(h)?, unit))
}

pub(crate) async fn set(ctx: &Ctx, p: &Parsed) -> Result<(), Failure> {
    let name = &p.positionals[0];
    let cpu: Option<u32> = p.num("set", "cpu")?;
    let memory: Option<u64> = p.num("set", "memory")?;
    let disk_size: Option<u64> = p.num("set", "disk-size")?;
    let display = match p.opt("display") {
        None => None,
        Some(v) => Some(parse_display(v).ok_or_else(|| {
            Failure::usage(
                "set",
                format!("The value '{v}' is invalid for '--display <display>'"),
            )
        })?),
    };
    if !ctx.home.vm_exists(name) {
        return Err(Failure::not_found(name));
    }
    let dir = ctx.home.vm_dir(name);
    home::touch_accessed(&dir)?;
    let path = ctx.home.config_path(name);
    let mut cfg = VmConfig::read(&path)?;
    if let Some(n) = cpu {
        if n < cfg.cpu_count_min {
            return Err(Failure::other(format!(
                "LessThanMinimalResourcesError: VM should have {} CPU cores at minimum (requested {n})",
                cfg.cpu_count_min
            )));
        }
        cfg.cpu_count = n;
    }
    if let Some(mb) = memory {
        if mb * MIB < cfg.memory_size_min {
            return Err(Failure::other(format!(
                "LessThanMinimalResourcesError: VM should have {} bytes of memory at minimum (requested {})",
                cfg.memory_size_min,
                mb * MIB
            )));
        }
        cfg.memory_size = mb * MIB;
    }
    if let Some((w, h, unit)) = display {
        if w != 0 {
            cfg.display.width = w;
        }
        if h != 0 {
            cfg.display.height = h;
        }
        if unit.is_some() {
            cfg.display.unit = unit;
        }
    }
    // `set` always writes displayRefit = <flag or nil> (docs/reference/tart-cli.md §2.3).
    cfg.display_refit = if p.flag("display-refit") {
        Some(true)
    } else if p.flag("no-display-refit") {
        Some(false)
    } else {
        None
    };
    if p.flag("random-mac") {
        cfg.mac_address = home::random_mac();
    }
    if p.flag("random-serial") && cfg.os == "darwin" {
        cfg.ecid = Some(format!(
            "ZmFrZS1{}",
            &home::md5_hex(&home::random_mac())[..12]
        ));
    }
    // config.json first, then --disk, then --disk-size (docs/reference/tart-cli.md §2.3).
    cfg.write(&path)?;
    if let Some(src) = p.opt("disk") {
        let work = ctx.home.tmp().join(format!("set-disk-{}", crate::uuid()));
        let _g = locks::create_locked_dir(&work).await?;
        home::sparse_copy(Path::new(src), &work.join("disk.img"))?;
        fs::rename(work.join("disk.img"), dir.join("disk.img"))?;
        fs::remove_dir_all(&work)?;
    }
    if let Some(gb) = disk_size {
        let current = home::disk_len(&dir);
        let wanted = gb * GB;
        if wanted < current {
            return Err(Failure::runtime(
                format!(
                    "new disk size of {gb}GB should be larger than the current disk size of {}GB",
                    current / GB
                ),
                1,
            ));
        }
        if wanted > current {
            fs::OpenOptions::new()
                .write(true)
                .open(dir.join("disk.img"))?
                .set_len(wanted)?;
        }
    }
    Ok(())
}

// === delete ===

pub(crate) fn delete(ctx: &Ctx, p: &Parsed) -> Result<(), Failure> {
    // In order; stop at the first failure, earlier deletions stay done
    // (docs/reference/tart-cli.md §2.9).
    for name in &p.positionals {
        if is_remote(name) {
            let remote = Remote::parse(name)?;
            let path = match &remote.reference {
                crate::registry::Reference::Tag(t) => remote.repo_dir(&ctx.home).join(t),
                crate::registry::Reference::Digest(d) => {
                    remote.repo_dir(&ctx.home).join(format!("sha256:{d}"))
                }
            };
            if fs::symlink_metadata(&path).is_err() {
                return Err(Failure::not_found(name));
            }
            remove_any(&path)?;
            gc_oci(&ctx.home)?;
            continue;
        }
        if !ctx.home.vm_exists(name) {
            return Err(Failure::not_found(name));
        }
        let Some(lock) = locks::try_lock_config(&ctx.home.config_path(name))? else {
            return Err(Failure::runtime(format!("VM \"{name}\" is running"), 1));
        };
        fs::remove_dir_all(ctx.home.vm_dir(name))?;
        drop(lock);
    }
    Ok(())
}

fn remove_any(path: &Path) -> std::io::Result<()> {
    let md = fs::symlink_metadata(path)?;
    if md.is_dir() {
        fs::remove_dir_all(path)
    } else {
        fs::remove_file(path)
    }
}

/// OCI GC: delete digest directories no tag points at, unless `.explicitly-pulled`.
pub(crate) fn gc_oci(home: &Home) -> std::io::Result<()> {
    let entries = oci_entries(home);
    let targets: Vec<PathBuf> = entries
        .iter()
        .filter(|(n, _)| !n.contains('@'))
        .filter_map(|(_, p)| fs::canonicalize(p).ok())
        .collect();
    for (name, path) in &entries {
        if name.contains('@') && !path.join(".explicitly-pulled").exists() {
            let canon = fs::canonicalize(path).unwrap_or_else(|_| path.clone());
            if !targets.contains(&canon) {
                fs::remove_dir_all(path)?;
            }
        }
    }
    // Dangling tags (their digest directory is gone) disappear too.
    for (name, path) in &entries {
        if !name.contains('@') && fs::metadata(path).is_err() {
            let _ = fs::remove_file(path);
        }
    }
    Ok(())
}

// === prune ===

pub(crate) fn prune(ctx: &Ctx, p: &Parsed) -> Result<(), Failure> {
    let vms = match p.opt("entries").unwrap_or("caches") {
        "caches" => false,
        "vms" => true,
        other => {
            return Err(Failure::usage(
                "prune",
                format!("'{other}' is not a valid <entries>"),
            ));
        }
    };
    let older_than: Option<u64> = p.num("prune", "older-than")?;
    let mut budget: Option<u64> = p.num("prune", "space-budget")?;
    if let Some(b) = p.num::<u64>("prune", "cache-budget")? {
        eprintln!("--cache-budget is deprecated, please use --space-budget");
        budget = budget.or(Some(b));
    }
    if older_than.is_none() && budget.is_none() && !p.flag("gc") {
        return Err(Failure::usage(
            "prune",
            "at least one pruning criteria must be specified",
        ));
    }
    if p.flag("gc") {
        gc_oci(&ctx.home)?;
    }
    // (path, accessed, allocated bytes), newest first.
    let mut units: Vec<(PathBuf, SystemTime, u64)> = if vms {
        ctx.home
            .local_vms()
            .into_iter()
            .filter(|n| vm_state(&ctx.home, n) != "running")
            .map(|n| ctx.home.vm_dir(&n))
            .map(|d| (d.clone(), home::accessed(&d), home::dir_sizes(&d).1))
            .collect()
    } else {
        oci_entries(&ctx.home)
            .into_iter()
            .filter(|(n, _)| n.contains('@'))
            .map(|(_, d)| (d.clone(), home::accessed(&d), home::dir_sizes(&d).1))
            .collect()
    };
    units.sort_by_key(|u| std::cmp::Reverse(u.1));
    let now = SystemTime::now();
    let mut used = 0u64;
    for (path, accessed, size) in units {
        let too_old = older_than.is_some_and(|days| {
            accessed
                <= now
                    .checked_sub(Duration::from_secs(days * 86_400))
                    .unwrap_or(SystemTime::UNIX_EPOCH)
        });
        let over_budget = budget.is_some_and(|gib| used + size > gib * 1024 * MIB);
        if too_old || over_budget {
            fs::remove_dir_all(&path)?;
        } else {
            used += size;
        }
    }
    if !vms {
        // Tags whose digest directory was pruned are removed too.
        for (name, path) in oci_entries(&ctx.home) {
            if !name.contains('@') && fs::metadata(&path).is_err() {
                let _ = fs::remove_file(path);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
