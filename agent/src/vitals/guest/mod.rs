//! The guest's own vitals: the logfmt lines the guest launcher appends to `status/vitals`
//! (docs/guest.md, "Vitals") and reading the newest of them from the host. Parsing is pure;
//! [`read_tail`] reads at most the given number of bytes from the end of the file.

use std::path::Path;

use super::model::{GuestSample, PressureLevel};
use crate::guest_file::{self, GuestFileError};

/// The file in the status share.
pub(crate) const FILE: &str = "vitals";

/// How much of the file's end a death's explanation reads: well over
/// [`super::model::HISTORY`] lines.
pub(crate) const TAIL_BYTES: u64 = 16 * 1024;

/// How much the sampler reads each tick: the lines written since the last tick and a few more
/// (a line is about 200 bytes, one per guest interval).
pub(crate) const TICK_BYTES: u64 = 4 * 1024;

/// One line: `vitals ts=… pressure=… …`. `None` for a line that is not a vitals line; a field
/// that is empty or unreadable is `None` in the sample (the launcher leaves a field empty when
/// its source failed).
pub(crate) fn parse_line(line: &str) -> Option<GuestSample> {
    let mut words = line.split_whitespace();
    if words.next()? != "vitals" {
        return None;
    }
    let mut s = GuestSample::default();
    for w in words {
        let Some((k, v)) = w.split_once('=') else {
            continue;
        };
        if v.is_empty() {
            continue;
        }
        match k {
            "ts" => s.ts = v.parse().ok(),
            "pressure" => s.pressure = v.parse().ok().and_then(PressureLevel::from_level),
            "free_percent" => s.free_percent = v.parse().ok().filter(|p| *p <= 100),
            "page_size" => s.page_size = v.parse().ok(),
            "free_pages" => s.free_pages = v.parse().ok(),
            "active_pages" => s.active_pages = v.parse().ok(),
            "wired_pages" => s.wired_pages = v.parse().ok(),
            "compressed_pages" => s.compressed_pages = v.parse().ok(),
            "swap_used" => s.swap_used_bytes = with_unit(v),
            "load1" => s.load_1m = v.parse().ok().filter(|l: &f64| l.is_finite()),
            "disk_used_percent" => s.disk_used_percent = v.parse().ok().filter(|p| *p <= 100),
            "jetsam_kills" => s.jetsam_kills = v.parse().ok(),
            _ => {}
        }
    }
    Some(s)
}

/// `1017.50M` (as `sysctl vm.swapusage` prints it) -> bytes; past `u64::MAX` is `u64::MAX`.
fn with_unit(v: &str) -> Option<u64> {
    let power = match v.chars().last()? {
        'K' => 10,
        'M' => 20,
        'G' => 30,
        'T' => 40,
        _ => return v.parse().ok(),
    };
    let n: f64 = v[..v.len() - 1].parse().ok()?;
    (n >= 0.0 && n.is_finite()).then(|| (n * 2f64.powi(power)).round() as u64)
}

/// Every vitals line of `text`, oldest first. A partial first line (the tail cut it) and a
/// partial last line (the launcher is writing it) are skipped.
pub(crate) fn parse_tail(text: &str, cut_at_start: bool) -> Vec<GuestSample> {
    let mut lines: Vec<&str> = text.split('\n').collect();
    // The text after the last newline is a line still being written.
    lines.pop();
    let skip = usize::from(cut_at_start);
    lines
        .into_iter()
        .skip(skip)
        .filter_map(parse_line)
        .collect()
}

/// The newest samples in the last `max` bytes of `<status>/vitals`; empty when there is no
/// such file. The guest writes it: it is read through [`crate::guest_file`].
///
/// # Errors
/// A read error other than not-found, or a refusal (a link, a FIFO in its place).
pub(crate) fn read_tail(status_dir: &Path, max: u64) -> Result<Vec<GuestSample>, GuestFileError> {
    match guest_file::read_last(&status_dir.join(FILE), max) {
        Ok((bytes, cut)) => Ok(parse_tail(&String::from_utf8_lossy(&bytes), cut)),
        Err(GuestFileError::Missing) => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests;
