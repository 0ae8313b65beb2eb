use super::*;

#[test]
fn samples_are_found_by_series_prefix() {
    let text = "# TYPE a counter\na_total{outcome=\"ok\"} 3\na_total{outcome=\"error\"} 1\nb 2.5\n";
    assert_eq!(sample(text, "a_total{outcome=\"ok\"}"), Some(3.0));
    assert_eq!(sample(text, "b"), Some(2.5));
    assert_eq!(sample(text, "a_total"), None, "needs the full series");
}

#[test]
fn chunked_bodies_are_joined() {
    assert_eq!(
        dechunk("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"),
        "hello world"
    );
}
