use super::*;

fn ts(s: &str) -> Timestamp {
    s.parse().unwrap()
}

#[test]
fn every_option_the_api_server_sends_is_read() {
    let q = parse(
        "follow=true&previous=true&timestamps=true&sinceSeconds=3600&tailLines=5&limitBytes=100",
    )
    .unwrap();
    assert_eq!(
        q,
        LogQuery {
            follow: true,
            tail_lines: Some(5),
            since_seconds: Some(3600),
            since_time: None,
            timestamps: true,
            previous: true,
            limit_bytes: Some(100),
        }
    );
    let q = parse("sinceTime=2026-11-23T10%3A00%3A00Z").unwrap();
    assert_eq!(q.since_time, Some(ts("2026-11-23T10:00:00Z")));
    assert_eq!(parse("").unwrap(), LogQuery::default());
}

#[test]
fn booleans_are_false_only_for_0_and_false() {
    let table = [
        ("follow=true", true),
        ("follow=1", true),
        ("follow=", true),
        ("follow=yes", true),
        ("follow=0", false),
        ("follow=FALSE", false),
        ("follow=false&follow=true", false),
        ("other=1", false),
    ];
    for (raw, want) in table {
        assert_eq!(parse(raw).unwrap().follow, want, "{raw}");
    }
}

#[test]
fn bad_values_get_kubelets_status_and_message() {
    let table = [
        (
            "tailLines=x",
            400,
            r#"{"message": "Unable to decode query."}"#,
        ),
        (
            "sinceTime=yesterday",
            400,
            r#"{"message": "Unable to decode query."}"#,
        ),
        (
            "tailLines=-1",
            422,
            r#"{"message":"Invalid request: tailLines: Invalid value: -1: must be greater than or equal to 0"}"#,
        ),
        (
            "limitBytes=0",
            422,
            r#"{"message":"Invalid request: limitBytes: Invalid value: 0: must be greater than 0"}"#,
        ),
        (
            "sinceSeconds=0",
            422,
            r#"{"message":"Invalid request: sinceSeconds: Invalid value: 0: must be greater than 0"}"#,
        ),
        (
            "sinceSeconds=5&sinceTime=2026-11-23T10:00:00Z",
            422,
            r#"{"message":"Invalid request: Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified"}"#,
        ),
    ];
    for (raw, status, body) in table {
        let e = parse(raw).unwrap_err();
        assert_eq!((e.status(), e.body().as_str()), (status, body), "{raw}");
    }
    assert_eq!(parse("tailLines=0").unwrap().tail_lines, Some(0));
}

#[test]
fn since_is_the_later_bound() {
    let now = ts("2026-11-23T10:00:00Z");
    let q = LogQuery {
        since_seconds: Some(60),
        ..LogQuery::default()
    };
    assert_eq!(q.since(now), Some(ts("2026-11-23T09:59:00Z")));
    let q = LogQuery {
        since_seconds: Some(60),
        since_time: Some(ts("2026-11-23T09:59:30Z")),
        ..LogQuery::default()
    };
    assert_eq!(q.since(now), Some(ts("2026-11-23T09:59:30Z")));
    assert_eq!(LogQuery::default().since(now), None);
}
