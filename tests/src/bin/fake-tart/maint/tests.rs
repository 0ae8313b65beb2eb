use super::*;

#[test]
fn display_parses_with_optional_parts_and_units() {
    assert_eq!(
        parse_display("1920x1080px"),
        Some((1920, 1080, Some("px".into())))
    );
    assert_eq!(parse_display("x900"), Some((0, 900, None)));
    assert_eq!(parse_display("abc"), None);
}
