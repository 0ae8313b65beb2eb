use super::*;

#[test]
fn iso8601_formats_known_instants() {
    assert_eq!(iso8601(UNIX_EPOCH), "1970-01-01T00:00:00Z");
    let t = UNIX_EPOCH + Duration::from_secs(1_787_056_496);
    assert_eq!(iso8601(t), "2026-08-18T12:34:56Z");
}

#[test]
fn relative_uses_the_largest_unit() {
    let t = SystemTime::now() - Duration::from_secs(180);
    assert_eq!(relative(t), "3 minutes ago");
}
