use super::*;

#[test]
fn meminfo_lines_are_read_in_kibibytes() {
    let text = "MemTotal:       2048 kB\nMemAvailable:    1024 kB\n";
    assert_eq!(parse_meminfo(text, "MemTotal:"), Some(2 << 20));
    assert_eq!(parse_meminfo(text, "MemAvailable:"), Some(1 << 20));
    assert_eq!(parse_meminfo(text, "SwapTotal:"), None);
}

#[test]
fn gather_uses_the_nearest_existing_ancestor_of_tart_home() {
    let dir = tempfile::tempdir().unwrap();
    let facts = HostFacts::gather(&FixedHost::default(), &dir.path().join("not/yet/here"));
    let vol = facts.tart_home_volume.expect("volume of the temp dir");
    assert!(vol.total_bytes > 0 && vol.free_bytes <= vol.total_bytes);
    assert_eq!(facts.chip, "Apple M2");
}

#[test]
fn local_ip_towards_loopback_is_loopback() {
    assert!(local_ip_towards(Ipv4Addr::LOCALHOST.into()).is_loopback());
}
