use super::*;

#[test]
fn meminfo_gives_free_percent_used_and_swap() {
    let t = "MemTotal:       1000 kB\nMemFree:  10 kB\nMemAvailable:    250 kB\nSwapTotal:  400 kB\nSwapFree: 100 kB\n";
    assert_eq!(meminfo(t), (Some(25), Some(750 * 1024), Some(300 * 1024)));
    assert_eq!(meminfo(""), (None, None, None));
}

#[test]
fn linux_levels_follow_free_memory() {
    assert_eq!(level_from_free(3), PressureLevel::Critical);
    assert_eq!(level_from_free(10), PressureLevel::Warning);
    assert_eq!(level_from_free(60), PressureLevel::Normal);
}

#[test]
fn proc_stat_counts_busy_ticks_only() {
    let t = "cpu  100 5 50 1000 20 1 2 3 0 0\ncpu0 1 1 1 1\n";
    assert_eq!(proc_stat_cpu_seconds(t, 100.0), Some(1.61));
}

#[test]
fn an_override_file_drives_the_linux_host() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("host");
    std::fs::write(&f, "vitals pressure=4 swap_used=2048.00M\n").unwrap();
    let s = HostSource::Linux { overrides: Some(f) }.sample(dir.path());
    assert_eq!(s.pressure, Some(PressureLevel::Critical));
    assert_eq!(s.swap_used_bytes, Some(2048 << 20));
    assert!(s.disk_free_bytes.is_some());
}
