//! The guest's own vitals: the logfmt lines the guest launcher appends to `status/vitals`
//! (docs/guest.md, "Vitals") and reading the newest of them from the host. Parsing is pure;
//! [`read_tail`] reads at most the given number of bytes from the end of the file.

use std::path::Path;

use super::model::{GuestSample, PressureLevel};
use crate::guest_file::{self, GuestFileError};

/// The file in the status share.
pub const FILE: &str = "vitals";

/// How much of the file's end a death's explanation reads: well over
/// [`super::model::HISTORY`] lines.
pub const TAIL_BYTES: u64 = 16 * 1024;

/// How much the sampler reads each tick: the lines written since the last tick and a few more
/// (a line is about 200 bytes, one per guest interval).
pub const TICK_BYTES: u64 = 4 * 1024;

/// One line: `vitals ts=… pressure=… …`. `None` for a line that is not a vitals line; a field
/// that is empty or unreadable is `None` in the sample (the launcher leaves a field empty when
/// its source failed).
pub fn parse_line(line: &str) -> Option<GuestSample> {
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
pub fn parse_tail(text: &str, cut_at_start: bool) -> Vec<GuestSample> {
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
pub fn read_tail(status_dir: &Path, max: u64) -> Result<Vec<GuestSample>, GuestFileError> {
    match guest_file::read_last(&status_dir.join(FILE), max) {
        Ok((bytes, cut)) => Ok(parse_tail(&String::from_utf8_lossy(&bytes), cut)),
        Err(GuestFileError::Missing) => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = "vitals ts=1732440000 pressure=4 free_percent=3 page_size=16384 free_pages=812 active_pages=453210 wired_pages=180233 compressed_pages=98765 swap_used=1017.50M load1=3.25 disk_used_percent=41 jetsam_kills=2";

    #[test]
    fn a_full_line_gives_every_field() {
        let s = parse_line(LINE).unwrap();
        assert_eq!(s.ts, Some(1732440000));
        assert_eq!(s.pressure, Some(PressureLevel::Critical));
        assert_eq!(s.free_percent, Some(3));
        assert_eq!(s.page_size, Some(16384));
        assert_eq!(s.free_pages, Some(812));
        assert_eq!(s.active_pages, Some(453210));
        assert_eq!(s.wired_pages, Some(180233));
        assert_eq!(s.compressed_pages, Some(98765));
        assert_eq!(s.swap_used_bytes, Some((1017.5 * 1048576.0) as u64));
        assert_eq!(s.load_1m, Some(3.25));
        assert_eq!(s.disk_used_percent, Some(41));
        assert_eq!(s.jetsam_kills, Some(2));
    }

    #[test]
    fn empty_and_bad_fields_are_unknown_and_other_lines_are_not_samples() {
        let s = parse_line("vitals ts=5 pressure= free_percent=140 load1=x jetsam_kills=").unwrap();
        assert!(s.is_empty());
        assert_eq!(s.ts, Some(5));
        assert_eq!(parse_line("share status did not appear"), None);
        assert_eq!(parse_line(""), None);
    }

    #[test]
    fn swap_is_read_with_every_unit() {
        let swap = |v: &str| {
            parse_line(&format!("vitals swap_used={v}"))
                .unwrap()
                .swap_used_bytes
        };
        assert_eq!(swap("512"), Some(512));
        assert_eq!(swap("3K"), Some(3 << 10));
        assert_eq!(swap("1.5G"), Some(3 << 29));
        assert_eq!(swap("2T"), Some(2 << 40));
        assert_eq!(swap("1e300T"), Some(u64::MAX));
        assert_eq!(swap("-1M"), None);
    }

    #[test]
    fn a_tail_skips_the_cut_first_line_and_the_unfinished_last_one() {
        let text = format!("s ts=1 pressure=1\n{LINE}\nvitals ts=2 pressure=2\nvitals ts=3 pre");
        let all = parse_tail(&text, true);
        assert_eq!(all.len(), 2);
        assert_eq!(all[1].ts, Some(2));
        let uncut = parse_tail("vitals ts=1\nvitals ts=2\n", false);
        assert_eq!(uncut.len(), 2);
    }

    #[test]
    fn read_tail_reads_only_the_end_of_a_long_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut text = String::new();
        for i in 0..2000 {
            text.push_str(&format!("vitals ts={i} pressure=1 free_percent=50\n"));
        }
        std::fs::write(dir.path().join(FILE), &text).unwrap();
        let got = read_tail(dir.path(), TAIL_BYTES).unwrap();
        assert_eq!(got.last().unwrap().ts, Some(1999));
        assert!(got.len() < 2000 && got.len() > 300);
        assert!(
            read_tail(&dir.path().join("absent"), TICK_BYTES)
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn a_link_in_place_of_the_vitals_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let host = tempfile::tempdir().unwrap();
        std::fs::write(host.path().join("x"), format!("{LINE}\n")).unwrap();
        std::os::unix::fs::symlink(host.path().join("x"), dir.path().join(FILE)).unwrap();
        assert!(matches!(
            read_tail(dir.path(), TAIL_BYTES),
            Err(GuestFileError::Refused(guest_file::Refused::Link))
        ));
    }
}
