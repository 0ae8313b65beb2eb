use super::*;

#[test]
fn negotiation_picks_the_clients_first_served_offer() {
    let served: Vec<&'static str> = PROTOCOLS.iter().map(|p| p.as_str()).collect();
    let offers = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let kubectl = offers(&[
        "v5.channel.k8s.io",
        "v4.channel.k8s.io",
        "v3.channel.k8s.io",
        "v2.channel.k8s.io",
        "channel.k8s.io",
    ]);
    assert_eq!(first_served(&kubectl, &served), Ok("v4.channel.k8s.io"));
    assert_eq!(
        first_served(
            &offers(&["v2.channel.k8s.io", "v4.channel.k8s.io"]),
            &served
        ),
        Ok("v2.channel.k8s.io")
    );
    assert_eq!(first_served(&[], &served), Err(NegotiationError::Missing));
    assert_eq!(
        first_served(
            &offers(&["v5.channel.k8s.io", "portforward.k8s.io"]),
            &served
        ),
        Err(NegotiationError::Unsupported(offers(&[
            "v5.channel.k8s.io",
            "portforward.k8s.io"
        ])))
    );
}

#[test]
fn exec_queries_decode_like_kubelets() {
    let o = exec_options("command=sh&command=-c&command=echo%20hi%3B%20exit%203&output=1&error=1")
        .unwrap();
    assert_eq!(o.command, ["sh", "-c", "echo hi; exit 3"]);
    assert!(o.stdout && o.stderr && !o.stdin && !o.tty);
    let tty = exec_options("command=sh&input=1&output=1&error=1&tty=1").unwrap();
    assert!(tty.tty && tty.stdin && tty.stdout);
    assert!(!tty.stderr, "kubelet drops stderr with a TTY");
    let not_one = exec_options("command=x&output=true&input=1").unwrap();
    assert!(!not_one.stdout && not_one.stdin, "only 1 is true");
    assert_eq!(exec_options("command=x&tty=1"), Err(NO_STREAMS));
    assert_eq!(exec_options("output=1"), Err(NO_COMMAND));
}

#[test]
fn sessions_wait_for_the_streams_the_query_and_version_imply() {
    let o = |q: &str| exec_options(q).unwrap();
    let table = [
        (
            "command=x&output=1",
            Protocol::V4,
            vec![Role::Error, Role::Stdout],
        ),
        (
            "command=x&input=1&output=1&error=1",
            Protocol::V4,
            vec![Role::Error, Role::Stdin, Role::Stdout, Role::Stderr],
        ),
        (
            "command=x&input=1&output=1&tty=1",
            Protocol::V4,
            vec![Role::Error, Role::Stdin, Role::Stdout, Role::Resize],
        ),
        (
            "command=x&input=1&output=1&tty=1",
            Protocol::V2,
            vec![Role::Error, Role::Stdin, Role::Stdout],
        ),
    ];
    for (q, p, want) in table {
        assert_eq!(expected(&o(q), p), want, "{q} {p:?}");
    }
}

#[test]
fn roles_parse_from_streamtype() {
    for r in [
        Role::Error,
        Role::Stdin,
        Role::Stdout,
        Role::Stderr,
        Role::Resize,
    ] {
        assert_eq!(Role::parse(r.as_str()), Some(r));
    }
    assert_eq!(Role::parse("data"), None);
}

#[test]
fn status_json_carries_the_exit_code_as_kubelet_writes_it() {
    let exited = |code| Outcome::Exited {
        code,
        command: vec!["sh".into(), "-c".into(), "exit 3".into()],
    };
    assert_eq!(
        status(&exited(0), Protocol::V4),
        r#"{"metadata":{},"status":"Success"}"#
    );
    let v: serde_json::Value = serde_json::from_str(&status(&exited(3), Protocol::V4)).unwrap();
    assert_eq!(v["status"], "Failure");
    assert_eq!(v["reason"], "NonZeroExitCode");
    assert_eq!(v["details"]["causes"][0]["reason"], "ExitCode");
    assert_eq!(v["details"]["causes"][0]["message"], "3");
    assert_eq!(
        v["message"],
        "command terminated with non-zero exit code: error executing command [sh -c exit 3], exit code 3"
    );
    let v: serde_json::Value = serde_json::from_str(&status(&exited(300), Protocol::V4)).unwrap();
    assert_eq!(
        v["details"]["causes"][0]["message"], "255",
        "a u8 for the client"
    );
    let v: serde_json::Value =
        serde_json::from_str(&status(&Outcome::Failed("boom".into()), Protocol::V4)).unwrap();
    assert_eq!(
        (v["reason"].as_str(), v["code"].as_i64()),
        (Some("InternalError"), Some(500))
    );
    assert_eq!(v["message"], "Internal error occurred: boom");
}

#[test]
fn older_versions_get_the_error_text_and_nothing_on_success() {
    assert_eq!(
        status(
            &Outcome::Exited {
                code: 0,
                command: vec![]
            },
            Protocol::V3
        ),
        ""
    );
    let s = status(
        &Outcome::Exited {
            code: 2,
            command: vec!["false".into()],
        },
        Protocol::V2,
    );
    assert!(
        s.starts_with("command terminated with non-zero exit code"),
        "{s}"
    );
}

#[test]
fn resize_sizes_are_found_across_frame_boundaries() {
    let mut d = ResizeDecoder::default();
    assert_eq!(d.push(br#"{"Width":80,"#).unwrap(), vec![]);
    assert_eq!(
        d.push(b"\"Height\":24}\n{\"width\":120,\"height\":40}\n{\"Wi")
            .unwrap(),
        vec![
            TermSize {
                width: 80,
                height: 24
            },
            TermSize {
                width: 120,
                height: 40
            }
        ]
    );
    assert_eq!(
        d.push(b"dth\":100,\"Height\":30}").unwrap(),
        vec![TermSize {
            width: 100,
            height: 30
        }]
    );
    assert!(d.push(br#"{"Width":"wide","Height":1}"#).is_err());
}
