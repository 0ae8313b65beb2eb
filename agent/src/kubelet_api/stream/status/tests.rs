use super::*;

fn json(s: &str) -> serde_json::Value {
    serde_json::from_str(s).unwrap()
}

#[test]
fn refusals_are_status_objects_with_the_reason_of_their_code() {
    let cases: &[(u16, &str)] = &[
        (400, "BadRequest"),
        (403, "Forbidden"),
        (404, "NotFound"),
        (429, "TooManyRequests"),
        (500, "InternalError"),
        (501, "InternalError"),
    ];
    for (code, reason) in cases {
        let v = json(&body(&refusal(*code, "x: y")));
        assert_eq!(
            v,
            serde_json::json!({
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "x: y", "reason": reason, "code": code,
            })
        );
    }
}

#[test]
fn the_error_stream_status_has_no_type_fields() {
    assert_eq!(
        stream_body(&success()),
        r#"{"metadata":{},"status":"Success"}"#
    );
    let cause = StatusCause {
        reason: Some("ExitCode".into()),
        message: Some("3".into()),
        ..StatusCause::default()
    };
    let v = json(&stream_body(&failure(
        "m".into(),
        "NonZeroExitCode",
        None,
        cause,
    )));
    assert_eq!(
        v,
        serde_json::json!({
            "metadata": {}, "status": "Failure", "message": "m", "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": "3"}]},
        })
    );
}
