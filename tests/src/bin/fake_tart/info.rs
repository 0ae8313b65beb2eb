//! The bookkeeping commands: `get` (§2.4), `list` (§2.5), `set` (§2.3), `delete` (§2.9) and
//! `prune` (§2.12), including their JSON quirks (`Size` string vs int, `Source` casing by
//! version, `Accessed`) and the OCI cache GC.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use crate::Ctx;
use crate::cli::Parsed;
use crate::error::Failure;
use crate::home::{self, GB, Home, MIB, VmConfig};
use crate::locks;
use crate::registry::{Remote, is_remote};
use crate::time::{iso8601, relative};

/// `running` if a `tart run` holds the config lock, else `suspended` if a snapshot exists,
/// else `stopped` (spec §3.1).
pub fn vm_state(home: &Home, name: &str) -> &'static str {
    if locks::lock_holder(&home.config_path(name)).is_some() {
        "running"
    } else if home.vm_dir(name).join("state.vzvmsave").exists() {
        "suspended"
    } else {
        "stopped"
    }
}

/// Parses "2.35.0" into (2, 35, 0); anything else (e.g. "SNAPSHOT") counts as newest.
pub fn version_tuple(v: &str) -> (u32, u32, u32) {
    let mut it = v.split('.').map(|p| p.parse::<u32>());
    match (it.next(), it.next(), it.next().unwrap_or(Ok(0))) {
        (Some(Ok(a)), Some(Ok(b)), Ok(c)) => (a, b, c),
        _ => (u32::MAX, 0, 0),
    }
}

fn format_arg(sub: &str, p: &Parsed) -> Result<bool, Failure> {
    match p.opt("format").unwrap_or("text") {
        "text" => Ok(false),
        "json" => Ok(true),
        other => Err(Failure::usage(
            sub,
            format!("'{other}' is not a valid <format>"),
        )),
    }
}

/// Renders a TextTable "plain" table: cells padded to the column width, one space apart.
fn table(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let lines: Vec<String> = rows
        .iter()
        .map(|r| {
            let cells: Vec<String> = r
                .iter()
                .enumerate()
                .map(|(i, s)| format!("{s:<w$}", w = widths[i]))
                .collect();
            cells.join(" ").trim_end().to_string()
        })
        .collect();
    lines.join("\n").trim().to_string()
}

// === get ===

pub fn get(ctx: &Ctx, p: &Parsed) -> Result<(), Failure> {
    let name = &p.positionals[0];
    let json = format_arg("get", p)?;
    if !ctx.home.vm_exists(name) {
        return Err(Failure::not_found(name));
    }
    let dir = ctx.home.vm_dir(name);
    home::touch_accessed(&dir)?;
    let cfg = VmConfig::read(&ctx.home.config_path(name))?;
    let (logical, allocated) = home::dir_sizes(&dir);
    let state = vm_state(&ctx.home, name);
    let mut display = format!("{}x{}", cfg.display.width, cfg.display.height);
    if let Some(unit) = &cfg.display.unit {
        display.push_str(unit);
    }
    let size = format!("{:.3}", allocated as f64 / GB as f64);
    let disk_format = cfg.disk_format.clone().unwrap_or_else(|| "raw".into());
    if json {
        let mut obj = serde_json::Map::new();
        obj.insert("OS".into(), json!(cfg.os));
        obj.insert("CPU".into(), json!(cfg.cpu_count));
        obj.insert("Memory".into(), json!(cfg.memory_size / MIB));
        obj.insert("Disk".into(), json!(logical / GB));
        if version_tuple(&ctx.version()) >= (2, 28, 0) {
            obj.insert("DiskFormat".into(), json!(disk_format));
        }
        obj.insert("Size".into(), json!(size));
        obj.insert("Display".into(), json!(display));
        obj.insert("Running".into(), json!(state == "running"));
        obj.insert("State".into(), json!(state));
        println!("{}", home::apple_pretty(&Value::Object(obj))?);
    } else {
        let rows = vec![
            [
                "OS",
                "CPU",
                "Memory",
                "Disk",
                "DiskFormat",
                "Size",
                "Display",
                "State",
            ]
            .map(String::from)
            .to_vec(),
            vec![
                cfg.os.clone(),
                cfg.cpu_count.to_string(),
                format!("{} MB", cfg.memory_size / MIB),
                format!("{} GB", logical / GB),
                disk_format,
                format!("{size} GB"),
                display,
                state.to_string(),
            ],
        ];
        println!("{}", table(&rows));
    }
    Ok(())
}

// === list ===

struct Entry {
    source: &'static str,
    name: String,
    disk: u64,
    size: u64,
    accessed: SystemTime,
    state: &'static str,
}

/// Every OCI cache entry: digest directories and tag symlinks, as (name, path).
pub fn oci_entries(home: &Home) -> Vec<(String, PathBuf)> {
    fn walk(dir: &Path, prefix: &str, out: &mut Vec<(String, PathBuf)>) {
        for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            let Ok(ft) = entry.file_type() else { continue };
            let path = entry.path();
            if ft.is_symlink() {
                out.push((format!("{prefix}:{name}"), path));
            } else if ft.is_dir() && name.starts_with("sha256:") {
                out.push((format!("{prefix}@{name}"), path));
            } else if ft.is_dir() {
                let next = if prefix.is_empty() {
                    name.replace("%3A", ":")
                } else {
                    format!("{prefix}/{name}")
                };
                walk(&path, &next, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(&home.oci(), "", &mut out);
    out.retain(|(n, _)| n.contains('/'));
    out.sort();
    out
}

pub fn list(ctx: &Ctx, p: &Parsed) -> Result<(), Failure> {
    let json = format_arg("list", p)?;
    let (local, oci) = match p.opt("source") {
        None => (true, true),
        Some("local") => (true, false),
        Some("oci") => (false, true),
        Some(other) => {
            return Err(Failure::usage(
                "list",
                format!("'{other}' is not a valid <source>"),
            ));
        }
    };
    let mut entries = Vec::new();
    if local {
        for name in ctx.home.local_vms() {
            let dir = ctx.home.vm_dir(&name);
            let (logical, allocated) = home::dir_sizes(&dir);
            let state = vm_state(&ctx.home, &name);
            let accessed = home::accessed(&dir);
            entries.push(Entry {
                source: "local",
                name,
                disk: logical,
                size: allocated,
                accessed,
                state,
            });
        }
    }
    if oci {
        for (name, path) in oci_entries(&ctx.home) {
            let (logical, allocated) = home::dir_sizes(&path);
            let accessed = home::accessed(&path);
            entries.push(Entry {
                source: "OCI",
                name,
                disk: logical,
                size: allocated,
                accessed,
                state: "stopped",
            });
        }
    }
    if p.flag("quiet") {
        for e in &entries {
            println!("{}", e.name);
        }
        return Ok(());
    }
    let version = version_tuple(&ctx.version());
    let source_name = |s: &'static str| {
        if s == "OCI" && version < (2, 11, 0) {
            "oci"
        } else {
            s
        }
    };
    if json {
        let arr: Vec<Value> = entries
            .iter()
            .map(|e| {
                let mut obj = serde_json::Map::new();
                obj.insert("Source".into(), json!(source_name(e.source)));
                obj.insert("Name".into(), json!(e.name));
                obj.insert("Disk".into(), json!(e.disk / GB));
                obj.insert("Size".into(), json!(e.size / GB));
                if ((2, 15, 0)..(2, 31, 0)).contains(&version) {
                    obj.insert("SizeOnDisk".into(), json!(e.size / GB));
                }
                if version >= (2, 31, 0) {
                    obj.insert("Accessed".into(), json!(iso8601(e.accessed)));
                }
                obj.insert("Running".into(), json!(e.state == "running"));
                obj.insert("State".into(), json!(e.state));
                Value::Object(obj)
            })
            .collect();
        println!("{}", home::apple_pretty(&Value::Array(arr))?);
    } else if entries.is_empty() {
        println!();
    } else {
        let mut rows = vec![
            ["Source", "Name", "Disk", "Size", "Accessed", "State"]
                .map(String::from)
                .to_vec(),
        ];
        for e in &entries {
            rows.push(vec![
                source_name(e.source).to_string(),
                e.name.clone(),
                (e.disk / GB).to_string(),
                (e.size / GB).to_string(),
                relative(e.accessed),
                e.state.to_string(),
            ]);
        }
        println!("{}", table(&rows));
    }
    Ok(())
}

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

pub fn set(ctx: &Ctx, p: &Parsed) -> Result<(), Failure> {
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
    // `set` always writes displayRefit = <flag or nil> (spec §2.3).
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
    // config.json first, then --disk, then --disk-size (spec §2.3).
    cfg.write(&path)?;
    if let Some(src) = p.opt("disk") {
        let work = ctx.home.tmp().join(format!("set-disk-{}", crate::uuid()));
        fs::create_dir_all(&work)?;
        let _g = locks::try_flock(&work)?;
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

pub fn delete(ctx: &Ctx, p: &Parsed) -> Result<(), Failure> {
    // In order; stop at the first failure, earlier deletions stay done (spec §2.9).
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
pub fn gc_oci(home: &Home) -> std::io::Result<()> {
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

pub fn prune(ctx: &Ctx, p: &Parsed) -> Result<(), Failure> {
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
mod tests {
    use super::*;

    #[test]
    fn versions_compare_numerically_and_snapshot_is_newest() {
        assert!(version_tuple("2.10.0") < version_tuple("2.11.0"));
        assert!(version_tuple("2.9") < version_tuple("2.31.0"));
        assert!(version_tuple("SNAPSHOT") > version_tuple("2.35.0"));
    }

    #[test]
    fn display_parses_with_optional_parts_and_units() {
        assert_eq!(
            parse_display("1920x1080px"),
            Some((1920, 1080, Some("px".into())))
        );
        assert_eq!(parse_display("x900"), Some((0, 900, None)));
        assert_eq!(parse_display("abc"), None);
    }

    #[test]
    fn tables_pad_columns_with_one_space() {
        let rows = vec![
            vec!["a".to_string(), "bb".into()],
            vec!["ccc".into(), "d".into()],
        ];
        assert_eq!(table(&rows), "a   bb\nccc d");
    }
}
