use super::*;

#[test]
fn config_json_is_pretty_with_apple_separators_and_round_trips() {
    let cfg = VmConfig::new("darwin", 4, 8192, stable_mac("x"));
    let text = apple_pretty(&cfg).unwrap();
    assert!(text.contains("\"cpuCount\" : 4"), "{text}");
    assert!(text.contains("\"memorySize\" : 8589934592"), "{text}");
    assert_eq!(serde_json::from_str::<VmConfig>(&text).unwrap(), cfg);
}

#[test]
fn macs_are_locally_administered_unicast_and_ips_stable() {
    for mac in [stable_mac("a"), random_mac()] {
        let first = u8::from_str_radix(&mac[..2], 16).unwrap();
        assert_eq!(first & 0x03, 0x02, "{mac}");
        assert_eq!(mac.len(), 17);
    }
    assert_eq!(
        ip_for_mac("aa:bb:cc:dd:ee:ff"),
        ip_for_mac("AA:BB:CC:DD:EE:FF")
    );
    assert!(ip_for_mac("aa:bb:cc:dd:ee:ff").starts_with("192.168.64."));
}

#[test]
fn loopback_ip_is_stable_per_home_and_mac_and_in_127_64() {
    let home = Path::new("/tmp/home-a");
    let a = loopback_ip_for_mac(home, "aa:bb:cc:dd:ee:ff");
    assert_eq!(a, loopback_ip_for_mac(home, "AA:BB:CC:DD:EE:FF"));
    assert_ne!(a, loopback_ip_for_mac(home, "aa:bb:cc:dd:ee:fe"));
    let other = Path::new("/tmp/home-b");
    assert_ne!(a, loopback_ip_for_mac(other, "aa:bb:cc:dd:ee:ff"));
    for mac in [
        "00:00:00:00:00:00",
        "aa:bb:cc:dd:ee:ff",
        "02:11:22:33:44:55",
    ] {
        let [a, b, _, d] = loopback_ip_for_mac(home, mac).octets();
        assert_eq!((a, b), (127, 64), "{mac}");
        assert!((1..=254).contains(&d), "{mac}");
    }
}

#[test]
fn sparse_copy_keeps_data_and_holes() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    create_sparse(&a, 10 * GB).unwrap();
    File::options()
        .write(true)
        .open(&a)
        .unwrap()
        .write_all_at(b"hello", 5 * GB)
        .unwrap();
    sparse_copy(&a, &b).unwrap();
    let md = fs::metadata(&b).unwrap();
    assert_eq!(md.len(), 10 * GB);
    assert!(md.blocks() * 512 < 100 * MIB, "copy is not sparse");
    let mut buf = [0u8; 5];
    File::open(&b)
        .unwrap()
        .read_exact_at(&mut buf, 5 * GB)
        .unwrap();
    assert_eq!(&buf, b"hello");
}
