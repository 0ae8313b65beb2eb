use super::*;

#[test]
fn durations_parse_with_units() {
    assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
    assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
    assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7200)));
    assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
    assert_eq!(parse_duration("7"), Ok(Duration::from_secs(7)));
    assert!(parse_duration("10 parsecs").is_err());
    assert!(parse_duration("m").is_err());
}

#[test]
fn durations_past_a_year_are_errors_not_overflows() {
    for s in [
        "9999999999999h",
        "5124095576030432h",
        "307445734561825861m",
        "99999999999999999999s",
        "18446744073709551615ms",
        "8761h",
    ] {
        let e = parse_duration(s).expect_err(s);
        assert!(e.contains("too large"), "{s}: {e}");
    }
    assert_eq!(parse_duration("8760h"), Ok(MAX_DURATION));
    assert_eq!(parse_duration("525600m"), Ok(MAX_DURATION));
    assert_eq!(parse_duration("31536000000ms"), Ok(MAX_DURATION));
}

#[test]
fn byte_quantities_use_kubernetes_suffixes() {
    assert_eq!(parse_bytes("4Gi"), Ok(4 << 30));
    assert_eq!(parse_bytes("500M"), Ok(500_000_000));
    assert_eq!(parse_bytes("1024"), Ok(1024));
    assert!(parse_bytes("4GB").unwrap_err().contains("suffix"));
    assert_eq!(parse_bytes("1.5Ki"), Ok(1536));
    assert!(
        parse_bytes("99999999999Pi")
            .unwrap_err()
            .contains("too large")
    );
}

#[test]
fn disk_threshold_is_percent_or_bytes() {
    assert_eq!(
        parse_disk_threshold("10%"),
        Ok(DiskThreshold::Percent(10.0))
    );
    assert_eq!(
        parse_disk_threshold("50Gi"),
        Ok(DiskThreshold::Bytes(50 << 30))
    );
    assert!(parse_disk_threshold("100%").is_err());
    assert_eq!(DiskThreshold::Percent(10.0).min_free(1000), 100);
}

#[test]
fn labels_and_taints_are_validated() {
    assert_eq!(
        parse_label("tart.run/pool=ci-1"),
        Ok(("tart.run/pool".into(), "ci-1".into()))
    );
    assert!(parse_label("nokv").is_err());
    assert!(parse_label("Bad_Prefix/x=1").is_err());
    assert!(parse_label("a=-bad").is_err());
    assert!(
        parse_label("tart.run/=x")
            .unwrap_err()
            .contains("name part")
    );
    let t = parse_taint("virtual-kubelet.io/provider=tart:NoSchedule").unwrap();
    assert_eq!(
        (t.key.as_str(), t.value.as_str()),
        ("virtual-kubelet.io/provider", "tart")
    );
    assert_eq!(parse_taint("dedicated:NoExecute").unwrap().value, "");
    assert!(parse_taint("a=b:Sometimes").unwrap_err().contains("effect"));
}

#[test]
fn semver_parses_three_numbers_only() {
    assert_eq!(parse_semver("2.35.0"), Some((2, 35, 0)));
    assert_eq!(parse_semver("2.35"), None);
    assert_eq!(parse_semver("2.35.0.1"), None);
    assert_eq!(parse_semver("SNAPSHOT"), None);
}
