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
