use super::*;

fn api_err(code: u16) -> kube::Error {
    kube::Error::Api(
        kube::core::Status::failure("m", "r")
            .with_code(code)
            .boxed(),
    )
}

#[test]
fn status_codes_map_to_closed_kinds() {
    let kinds: Vec<&str> = [403, 404, 409, 422, 504, 408, 500, 503]
        .map(|c| ApiErrorKind::of(&api_err(c)).as_str())
        .to_vec();
    assert_eq!(
        kinds,
        [
            "forbidden",
            "not_found",
            "conflict",
            "invalid",
            "timeout",
            "timeout",
            "other",
            "other"
        ]
    );
}

#[test]
fn event_names_fit_for_the_longest_object_name() {
    let long = format!("{}.x", "a".repeat(251));
    let n = event_name(&long, "18f2a3b4c5d6e7f8");
    assert!(n.len() <= MAX_NAME, "{} chars", n.len());
    assert!(n.ends_with(".18f2a3b4c5d6e7f8"));
    assert!(!n.contains(".."), "no empty label: {n}");
    assert_eq!(event_name("runner", "ff"), "runner.ff");
}
