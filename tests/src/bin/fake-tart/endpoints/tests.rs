use super::*;

#[test]
fn each_state_answers_with_its_status_or_not_at_all() {
    let cases = [
        (EndpointState::Healthy, Some("HTTP/1.1 200 OK\r\n")),
        (
            EndpointState::Failing,
            Some("HTTP/1.1 500 Internal Server Error\r\n"),
        ),
        (EndpointState::Hanging, None),
        (EndpointState::Closed, None),
    ];
    for (state, status_line) in cases {
        let text = answer(state, "vm1").map(|b| String::from_utf8(b).unwrap());
        assert_eq!(
            text.as_deref()
                .map(|t| t.split_inclusive("\r\n").next().unwrap()),
            status_line,
            "{state:?}"
        );
        if let Some(text) = text {
            let body = format!("{} vm1\n", state.as_str());
            assert!(text.ends_with(&format!("\r\n\r\n{body}")), "{text}");
            assert!(text.contains(&format!("Content-Length: {}\r\n", body.len())));
            assert!(text.contains("Connection: close\r\n"));
        }
    }
}
