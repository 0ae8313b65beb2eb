use super::*;

#[derive(Debug, thiserror::Error)]
#[error("outer")]
struct Outer(#[source] std::io::Error);

#[test]
fn each_source_follows_its_error_after_a_colon() {
    let e = Outer(std::io::Error::other("inner"));
    assert_eq!(error_chain(&e), "outer: inner");
}
