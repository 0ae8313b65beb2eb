//! Fuzz targets for the parsers of Tart's output (`parse.rs`): plain `fn(&[u8])` entry points
//! that call the real parser and assert what must hold for any input. The driver that feeds
//! them (seed corpus, mutation, time and memory limits) is the workspace's `fuzz` crate; this
//! module only exists with the `fuzzing` feature (or in this crate's tests).

use std::path::{Component, Path};

use crate::parse;

/// One fuzz target: a parser entry point and what the driver needs to exercise it.
#[derive(Clone, Copy)]
pub struct Target {
    /// The target's name (also its corpus directory).
    pub name: &'static str,
    /// Runs the parser on one input; panics when an invariant breaks.
    pub run: fn(&[u8]),
    /// Seed inputs: real outputs and strings from the parser's tests.
    pub seeds: fn() -> Vec<Vec<u8>>,
    /// Tokens the mutator splices in (field names, separators).
    pub tokens: &'static [&'static str],
    /// The most one input may have allocated at once, in bytes.
    pub max_alloc: usize,
}

/// Allocation bound for a target whose parser keeps at most a copy of its input (the mutator's
/// inputs are a few KiB): far above what such a parser needs, far below a runaway allocation.
pub const COPY_BOUND: usize = 1 << 20;

/// The targets of this crate.
pub fn targets() -> Vec<Target> {
    vec![
        Target {
            name: "tart_json",
            run: tart_json,
            seeds: json_seeds,
            tokens: &[
                "\"Name\"",
                "\"Source\"",
                "\"State\"",
                "\"Running\"",
                "\"Size\"",
                "\"Disk\"",
                "\"Accessed\"",
                "\"OCI\"",
                "\"local\"",
                "\"running\"",
                "\"suspended\"",
                "true",
                "null",
                "1e308",
                "-1",
                "\"NaN\"",
                "\"inf\"",
                "{",
                "}",
                "[",
                "]",
                ",",
                ":",
            ],
            max_alloc: COPY_BOUND,
        },
        Target {
            name: "tart_text",
            run: tart_text,
            seeds: text_seeds,
            tokens: &[
                "pulling ",
                "...",
                "%",
                "pulling disk (",
                " GB compressed)",
                "2.35.0",
                "SNAPSHOT",
                "\n",
                "192.168.64.",
                "-8-g16d186c",
            ],
            max_alloc: COPY_BOUND,
        },
        Target {
            name: "tart_cache_path",
            run: tart_cache_path,
            seeds: cache_path_seeds,
            tokens: &["..", ".", "/", "\0", ":5000", "sha256:", "\n"],
            max_alloc: COPY_BOUND,
        },
    ]
}

/// Seeds from text.
pub fn strings<S: AsRef<str>>(texts: &[S]) -> Vec<Vec<u8>> {
    texts
        .iter()
        .map(|s| s.as_ref().as_bytes().to_vec())
        .collect()
}

/// `tart list` and `tart get` JSON: never a panic; every number read is finite.
fn tart_json(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Ok(vms) = parse::list(&text) {
        for vm in vms {
            assert!(vm.size_gb.is_finite(), "list Size {}", vm.size_gb);
        }
    }
    if let Ok(d) = parse::get(&text) {
        assert!(d.size_gb.is_finite(), "get Size {}", d.size_gb);
    }
}

/// `tart ip`, `tart --version` and pull progress lines: never a panic; an address read is
/// the first non-empty line exactly, and a version's numbers come from its text.
fn tart_text(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Ok(ip) = parse::ip(&text) {
        let first = text.lines().map(str::trim).find(|l| !l.is_empty());
        assert_eq!(first, Some(ip.to_string().as_str()));
    }
    let v = parse::version(&text);
    assert_eq!(v.raw, text.trim());
    if v.semver.is_some() {
        assert!(
            v.raw.starts_with(|c: char| c.is_ascii_digit()),
            "{:?}",
            v.raw
        );
    }
    for line in text.lines() {
        if let parse::PullLine::Percent(p) = parse::pull_line(line) {
            assert!(line.trim().ends_with(&format!("{p}%")), "{line:?}");
        }
    }
}

/// A cached image's tag link stays inside `$TART_HOME/cache/OCIs`, whatever the host,
/// repository and tag (split from the input at `\n`); a digest name is exactly a digest.
fn tart_cache_path(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut parts = text.splitn(3, '\n');
    let (host, repository, tag) = (
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
    );
    let home = Path::new("/home/fuzz/.tart");
    if let Some(link) = parse::tag_link(home, host, repository, tag) {
        let below = link
            .strip_prefix(home.join("cache/OCIs"))
            .unwrap_or_else(|_| panic!("{link:?} is outside the cache"));
        assert!(
            below
                .components()
                .all(|c| matches!(c, Component::Normal(_) | Component::CurDir)),
            "{link:?} steps out of the cache"
        );
    }
    if let Some(d) = parse::digest_name(&text) {
        assert_eq!(d.len(), 71, "{d:?}");
    }
}

fn json_seeds() -> Vec<Vec<u8>> {
    strings(&[
        r#"[{"Disk":50,"Name":"macos-sequoia-base","Size":22,"SizeOnDisk":22,"Source":"local","Running":false,"State":"stopped","Accessed":"2024-11-20T10:00:00Z"}]"#,
        r#"[{"Disk":50,"Name":"ghcr.io/cirruslabs/macos-sequoia-base:latest","Size":21,"Source":"OCI","Running":true,"State":"running"}]"#,
        r#"[{"Name":"old","Source":"local","Running":true,"Size":"20.5"}]"#,
        r#"{"CPU":4,"Display":"1024x768","DiskFormat":"asif","Disk":50,"Memory":8192,"OS":"darwin","Running":false,"Size":"21.914","State":"stopped"}"#,
        r#"{"CPU":4,"Memory":8192,"Disk":50,"Size":"20.000","Running":true}"#,
        "[]",
    ])
}

fn text_seeds() -> Vec<Vec<u8>> {
    strings(&[
        "192.168.64.5\n",
        "\n  10.0.0.7  \n",
        "2.35.0\n",
        "2.35.0-8-g16d186c",
        "SNAPSHOT",
        "pulling ghcr.io/cirruslabs/macos-sequoia-base:latest...\npulling manifest...\npulling disk (25.3 GB compressed)...\n0%\n42%\n100%\npulling NVRAM...\n",
        "waiting for lock...\nfound an image ghcr.io/x that will allow us to avoid fetching 3 layers\n",
        "Error pulling image: \"timeout\", attempting to re-try...\n",
    ])
}

fn cache_path_seeds() -> Vec<Vec<u8>> {
    strings(&[
        "ghcr.io\ncirruslabs/macos-sequoia-base\nlatest",
        "localhost:5000\nns/img\n1.0",
        "ghcr.io\na/../../b\nlatest",
        "..\nrepo\ntag",
        "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
    ])
}

#[cfg(test)]
mod tests;
