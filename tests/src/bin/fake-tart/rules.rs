//! Loading the knob file on every invocation and consuming failure-injection rules. Counters
//! of rules with `times` live in `fake-tart/counters.json`, updated under an flock on
//! `fake-tart/counters.lock`, so concurrent processes consume a rule exactly `times` times.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::Path;

use crate::error::Failure;
use crate::home::{Home, md5_hex};
use crate::knobs::{Action, Knobs, Rule};

/// Reads `fake-tart/knobs.json`; a missing file means all defaults. A malformed file is a loud
/// error (exit 70), so a typo in a test never silently turns a knob off.
pub(crate) fn load(home: &Home) -> Result<Knobs, Failure> {
    let path = home.fake_dir().join("knobs.json");
    match fs::read(&path) {
        Ok(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => Ok(Knobs::default()),
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
            Failure::runtime(format!("fake-tart: invalid {}: {e}", path.display()), 70)
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Knobs::default()),
        Err(e) => Err(e.into()),
    }
}

/// A counter key that changes when the rule changes, so editing a rule re-arms it.
fn key(index: usize, rule: &Rule) -> String {
    let json = serde_json::to_string(rule).unwrap_or_default();
    format!("{index}:{}", &md5_hex(&json)[..12])
}

/// The action of the first rule matching `op` on `names` that still has uses left; consumes one.
pub(crate) fn take(
    home: &Home,
    knobs: &Knobs,
    op: &str,
    names: &[&str],
) -> Result<Option<Action>, Failure> {
    let candidates: Vec<(usize, &Rule)> = knobs
        .rules
        .iter()
        .enumerate()
        .filter(|(_, r)| r.matches(op, names))
        .collect();
    if candidates.is_empty() {
        return Ok(None);
    }
    if candidates.iter().all(|(_, r)| r.times.is_none()) {
        return Ok(Some(candidates[0].1.action.clone()));
    }
    let dir = home.fake_dir();
    fs::create_dir_all(&dir)?;
    let _guard = crate::locks::flock_blocking(&dir.join("counters.lock"))?;
    let counters_path = dir.join("counters.json");
    let mut counters: BTreeMap<String, u32> = match fs::read(&counters_path) {
        Ok(b) => serde_json::from_slice(&b).unwrap_or_default(),
        Err(_) => BTreeMap::new(),
    };
    for (i, rule) in candidates {
        let Some(times) = rule.times else {
            return Ok(Some(rule.action.clone()));
        };
        let used = counters.entry(key(i, rule)).or_insert(0);
        if *used < times {
            *used += 1;
            write_atomic(
                &counters_path,
                &serde_json::to_vec_pretty(&counters).unwrap_or_default(),
            )?;
            return Ok(Some(rule.action.clone()));
        }
    }
    Ok(None)
}

/// Writes through a temporary file and a rename, so readers never see half a file.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
    fs::write(&tmp, bytes)?;
    fs::rename(&tmp, path)
}
