//! The read-only commands: `get` (docs/reference/tart-cli.md §2.4) and `list` (§2.5) with their
//! JSON quirks (`Size` string vs int, `Source` casing and `SizeOnDisk`/`Accessed` by version), plus
//! the VM state and OCI-cache walk the other commands share.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::{Value, json};

use crate::Ctx;
use crate::cli::Parsed;
use crate::error::Failure;
use crate::home::{self, GB, Home, MIB, VmConfig};
use crate::locks;
use crate::time::{iso8601, relative};

/// `running` if a `tart run` holds the config lock, else `suspended` if a snapshot exists,
/// else `stopped` (docs/reference/tart-cli.md §3.1).
pub(crate) fn vm_state(home: &Home, name: &str) -> &'static str {
    if locks::lock_holder(&home.config_path(name)).is_some() {
        "running"
    } else if home.vm_dir(name).join("state.vzvmsave").exists() {
        "suspended"
    } else {
        "stopped"
    }
}

/// Parses "2.35.0" into (2, 35, 0); anything else (e.g. "SNAPSHOT") counts as newest.
pub(crate) fn version_tuple(v: &str) -> (u32, u32, u32) {
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

pub(crate) fn get(ctx: &Ctx, p: &Parsed) -> Result<(), Failure> {
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
pub(crate) fn oci_entries(home: &Home) -> Vec<(String, PathBuf)> {
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

pub(crate) fn list(ctx: &Ctx, p: &Parsed) -> Result<(), Failure> {
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

#[cfg(test)]
mod tests;
