use super::*;

#[test]
fn quantities_parse_with_every_suffix_family() {
    assert_eq!(parse_scaled("2", 1000), Some(2000));
    assert_eq!(parse_scaled("500m", 1000), Some(500));
    assert_eq!(parse_scaled("1.5", 1000), Some(1500));
    assert_eq!(parse_scaled("0.0001", 1000), Some(1)); // rounded up
    assert_eq!(parse_scaled("8Gi", 1), Some(8 << 30));
    assert_eq!(parse_scaled("1.5Gi", 1), Some(3 << 29));
    assert_eq!(parse_scaled("4G", 1), Some(4_000_000_000));
    assert_eq!(parse_scaled("128974848", 1), Some(128_974_848));
    assert_eq!(parse_scaled("129e6", 1), Some(129_000_000));
    assert_eq!(parse_scaled("123Mi", 1), Some(123 << 20));
    assert_eq!(parse_scaled("+1k", 1), Some(1000));
}

#[test]
fn garbage_negative_and_overflowing_quantities_are_rejected() {
    for bad in [
        "",
        ".",
        "abc",
        "-1",
        "1x",
        "1Xi",
        "1..2",
        "1.2.3",
        "Gi",
        "1 Gi",
        "1e99999",
        "9999999999999999999999Ei",
    ] {
        assert_eq!(parse_scaled(bad, 1), None, "{bad:?}");
    }
    assert_eq!(parse_bytes("20Ei"), None, "past u64");
    assert_eq!(parse_bytes("4Gi"), Some(4 << 30));
}
