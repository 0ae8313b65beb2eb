use super::*;

#[test]
fn proc_stat_fields_count_after_the_last_parenthesis() {
    // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime
    // stime cutime cstime priority nice threads itrealvalue starttime vsize rss ...
    let text = "42 (tart (kube) let) S 1 42 42 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 9 0 \
                12345 987654321 2048 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0";
    assert_eq!(
        parse_proc_stat(text),
        Some(ProcStat {
            start_ticks: 12345,
            vsize_bytes: 987_654_321,
            rss_pages: 2048,
        })
    );
    assert_eq!(parse_proc_stat("42 (x) S 1 2"), None);
}

#[test]
fn boot_time_is_the_btime_line() {
    let text = "cpu  1 2 3 4\nintr 5\nbtime 1764200000\nprocesses 9\n";
    assert_eq!(boot_time(text), Some(1_764_200_000));
    assert_eq!(boot_time("cpu 1 2 3\n"), None);
}

#[test]
fn ps_row_sizes_are_kib_and_elapsed_takes_every_form() {
    let cases = [
        (
            "  5120 4194304    01:05\n",
            Some((5120 * 1024, 4_194_304 * 1024, 65)),
        ),
        (
            "5120 4194304 02:01:05",
            Some((5_242_880, 4_294_967_296, 7265)),
        ),
        ("1 2 3-00:00:10", Some((1024, 2048, 3 * 86400 + 10))),
        ("1 2", None),
        ("x 2 01:00", None),
        ("1 2 1:2:3:4", None),
    ];
    for (text, want) in cases {
        let got = parse_ps(text).map(|p| (p.rss_bytes, p.vsz_bytes, p.elapsed_seconds));
        assert_eq!(got, want, "{text:?}");
    }
}

#[test]
fn the_collector_exposes_what_was_read_and_leaves_out_what_was_not() {
    let mut reg = Registry::default();
    let m = ProcessMetrics::register(&mut reg);
    m.set(Sample {
        cpu_seconds_total: Some(1.5),
        resident_memory_bytes: Some(4096),
        virtual_memory_bytes: None,
        open_fds: Some(12),
        max_fds: Some(1024),
        start_time_seconds: Some(1_764_200_000.0),
    });
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &reg).unwrap();
    for line in [
        "# TYPE process_cpu_seconds counter",
        "process_cpu_seconds_total 1.5",
        "process_resident_memory_bytes 4096",
        "process_open_fds 12",
        "process_max_fds 1024",
        "process_start_time_seconds 1764200000",
    ] {
        assert!(text.contains(line), "missing {line} in\n{text}");
    }
    assert!(!text.contains("process_virtual_memory_bytes"), "{text}");
}

#[test]
fn this_process_reads_on_linux() {
    if cfg!(target_os = "macos") {
        return;
    }
    let s = read();
    assert!(s.cpu_seconds_total.is_some_and(|v| v > 0.0), "{s:?}");
    assert!(s.resident_memory_bytes.is_some_and(|v| v > 0), "{s:?}");
    assert!(s.virtual_memory_bytes.is_some_and(|v| v > 0), "{s:?}");
    assert!(s.open_fds.is_some_and(|v| v > 2), "{s:?}");
    assert!(s.max_fds.is_some_and(|v| v > 0), "{s:?}");
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    assert!(
        s.start_time_seconds
            .is_some_and(|t| t <= now + 1.0 && t > now - 86400.0 * 365.0),
        "{s:?}"
    );
}
