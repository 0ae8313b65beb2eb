//! Parsers for `tart` output (docs/reference/tart-cli.md §2): `list`/`get --format json` with their
//! version quirks, `ip`, `--version` and `pull` progress lines. Pure functions; the JSON is read
//! through [`serde_json::Value`] so that unknown or missing fields never break the agent.

use std::net::Ipv4Addr;

use serde_json::{Map, Value};

use crate::{Source, Version, VmDetails, VmInfo, VmState};

/// Output that does not match what Tart prints.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ParseError {
    /// Not valid JSON, or not the expected shape.
    #[error("unexpected JSON from tart {what}: {detail}")]
    Json {
        /// Which command's output.
        what: &'static str,
        /// What was wrong.
        detail: String,
    },
    /// `tart ip` printed no IPv4 address on its first line.
    #[error("no IPv4 address in tart ip output")]
    NoIp,
}

/// `tart list --format json` (docs/reference/tart-cli.md §2.5): `Size` an int, `Source` in any
/// case, optional `Accessed`, legacy `SizeOnDisk` ignored, `Running` used when `State` is missing.
///
/// # Errors
/// [`ParseError::Json`] when the text is not an array of objects with `Name` and `Source`.
pub(crate) fn list(text: &str) -> Result<Vec<VmInfo>, ParseError> {
    let v: Value = serde_json::from_str(text).map_err(|e| json_err("list", e.to_string()))?;
    let arr = v
        .as_array()
        .ok_or_else(|| json_err("list", "not an array".into()))?;
    arr.iter()
        .map(|item| {
            let o = item
                .as_object()
                .ok_or_else(|| json_err("list", "entry is not an object".into()))?;
            let source = match str_field(o, "Source", "list")?
                .to_ascii_lowercase()
                .as_str()
            {
                "local" => Source::Local,
                "oci" => Source::Oci,
                other => return Err(json_err("list", format!("unknown Source {other:?}"))),
            };
            Ok(VmInfo {
                source,
                name: str_field(o, "Name", "list")?.to_owned(),
                disk_gb: num(o.get("Disk")).map_or(0, |f| f as u64),
                size_gb: num(o.get("Size")).unwrap_or(0.0),
                accessed: o.get("Accessed").and_then(Value::as_str).map(str::to_owned),
                state: state(o),
            })
        })
        .collect()
}

/// `tart get <vm> --format json` (docs/reference/tart-cli.md §2.4): `Size` a `"%.3f"` string,
/// `DiskFormat` missing means `raw`, `Running` used when `State` is missing.
///
/// # Errors
/// [`ParseError::Json`] when the text is not a JSON object.
pub(crate) fn get(text: &str) -> Result<VmDetails, ParseError> {
    let v: Value = serde_json::from_str(text).map_err(|e| json_err("get", e.to_string()))?;
    let o = v
        .as_object()
        .ok_or_else(|| json_err("get", "not an object".into()))?;
    Ok(VmDetails {
        os: o
            .get("OS")
            .and_then(Value::as_str)
            .unwrap_or("darwin")
            .to_owned(),
        cpu: num(o.get("CPU")).map_or(0, |f| f as u32),
        memory_mib: num(o.get("Memory")).map_or(0, |f| f as u64),
        disk_gb: num(o.get("Disk")).map_or(0, |f| f as u64),
        disk_format: o
            .get("DiskFormat")
            .and_then(Value::as_str)
            .unwrap_or("raw")
            .to_owned(),
        size_gb: num(o.get("Size")).unwrap_or(0.0),
        display: o
            .get("Display")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        state: state(o),
    })
}

/// `tart ip`: the IPv4 address on the first non-empty line (docs/reference/tart-cli.md §2.11).
///
/// # Errors
/// [`ParseError::NoIp`] otherwise.
pub(crate) fn ip(text: &str) -> Result<Ipv4Addr, ParseError> {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .and_then(|l| l.parse().ok())
        .ok_or(ParseError::NoIp)
}

/// `tart --version`: `2.35.0`, or `SNAPSHOT` for local builds (docs/reference/tart-cli.md §1.7).
/// Never fails.
pub(crate) fn version(text: &str) -> Version {
    let raw = text.trim().to_owned();
    let mut parts = raw.split('.').map(|p| {
        // Tolerate suffixes such as `2.35.0-8-g16d186c`.
        let digits: String = p.chars().take_while(char::is_ascii_digit).collect();
        digits.parse::<u32>().ok()
    });
    let semver = match (parts.next(), parts.next(), parts.next()) {
        (Some(Some(a)), Some(Some(b)), Some(Some(c))) => Some((a, b, c)),
        (Some(Some(a)), Some(Some(b)), None) => Some((a, b, 0)),
        _ => None,
    };
    Version { raw, semver }
}

/// One stdout line of `tart pull` (or the pull inside `tart clone`), with `CI` set
/// (docs/reference/tart-cli.md §2.1).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PullLine {
    /// `pulling <name>...`
    Pulling(String),
    /// `pulling manifest...`
    Manifest,
    /// `waiting for lock...`: another pull of the same host holds the host flock.
    WaitingForLock,
    /// `found an image ... that will allow us to avoid fetching ...`
    Deduplicating,
    /// `pulling disk (25.3 GB compressed)...`
    Disk {
        /// Compressed size in GB, when printed.
        compressed_gb: Option<f64>,
    },
    /// `N%`
    Percent(u8),
    /// `pulling NVRAM...`
    Nvram,
    /// `... image is already cached and linked!` or `... image is already cached! creating a
    /// symlink...`
    AlreadyCached,
    /// `Error pulling image: "...", attempting to re-try...` or the per-layer variant.
    Retrying(String),
    /// Anything else.
    Other(String),
}

/// Classify one pull progress line.
pub(crate) fn pull_line(line: &str) -> PullLine {
    let l = line.trim();
    if let Some(p) = l.strip_suffix('%').and_then(|n| n.parse::<u8>().ok()) {
        return PullLine::Percent(p);
    }
    match l {
        "pulling manifest..." => return PullLine::Manifest,
        "waiting for lock..." => return PullLine::WaitingForLock,
        "pulling NVRAM..." => return PullLine::Nvram,
        _ => {}
    }
    if let Some(rest) = l.strip_prefix("pulling disk") {
        let compressed_gb = rest
            .trim()
            .strip_prefix('(')
            .and_then(|r| r.split_whitespace().next())
            .and_then(|n| n.parse().ok());
        return PullLine::Disk { compressed_gb };
    }
    if l.ends_with("image is already cached and linked!")
        || l.ends_with("image is already cached! creating a symlink...")
    {
        return PullLine::AlreadyCached;
    }
    if l.starts_with("Error pulling") && l.ends_with("attempting to re-try...") {
        return PullLine::Retrying(l.to_owned());
    }
    if l.starts_with("found an image") {
        return PullLine::Deduplicating;
    }
    if let Some(name) = l
        .strip_prefix("pulling ")
        .and_then(|r| r.strip_suffix("..."))
    {
        return PullLine::Pulling(name.to_owned());
    }
    PullLine::Other(l.to_owned())
}

fn state(o: &Map<String, Value>) -> VmState {
    match o.get("State").and_then(Value::as_str) {
        Some(s) if s.eq_ignore_ascii_case("running") => VmState::Running,
        Some(s) if s.eq_ignore_ascii_case("suspended") => VmState::Suspended,
        Some(_) => VmState::Stopped,
        // Before 1.8.0 only the `Running` bool existed (docs/reference/tart-cli.md §2.4).
        None => match o.get("Running").and_then(Value::as_bool) {
            Some(true) => VmState::Running,
            _ => VmState::Stopped,
        },
    }
}

/// A number given as a JSON number or as a numeric string (`get`'s `Size`,
/// docs/reference/tart-cli.md §2.4). A string that reads as infinite or NaN is no number.
fn num(v: Option<&Value>) -> Option<f64> {
    let n = match v? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    };
    n.filter(|f: &f64| f.is_finite())
}

fn str_field<'a>(
    o: &'a Map<String, Value>,
    key: &str,
    what: &'static str,
) -> Result<&'a str, ParseError> {
    o.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| json_err(what, format!("missing string field {key}")))
}

fn json_err(what: &'static str, detail: String) -> ParseError {
    ParseError::Json { what, detail }
}

/// `$TART_HOME/cache/OCIs/<host>/<repository>/<tag>`, the tag symlink of a cached image
/// (docs/reference/tart-cli.md §1.1; a `:port` in the host is percent-encoded). `None` for a
/// component that could step outside the cache (empty, `.`, `..`, or a `/` in the host or tag).
pub(crate) fn tag_link(
    tart_home: &std::path::Path,
    host: &str,
    repository: &str,
    tag: &str,
) -> Option<std::path::PathBuf> {
    let bad = |c: &str| c.is_empty() || c == "." || c == ".." || c.contains('\0');
    if bad(host) || bad(tag) || host.contains('/') || tag.contains('/') {
        return None;
    }
    if repository.split('/').any(bad) {
        return None;
    }
    Some(
        tart_home
            .join("cache/OCIs")
            .join(host.replace(':', "%3A"))
            .join(repository)
            .join(tag),
    )
}

/// `sha256:<64 lowercase hex>` as is; anything else is not a digest.
pub(crate) fn digest_name(s: &str) -> Option<String> {
    let hex = s.strip_prefix("sha256:")?;
    (hex.len() == 64
        && hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
    .then(|| s.to_owned())
}

#[cfg(test)]
mod tests;
