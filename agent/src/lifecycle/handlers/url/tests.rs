use super::*;

fn url(path: &str) -> Url {
    Url::new(Scheme::Http, "10.0.0.5", 8080, path)
}

#[test]
fn urls_print_as_kubelet_formats_them() {
    assert_eq!(url("/healthz").to_string(), "http://10.0.0.5:8080/healthz");
    assert_eq!(url("healthz").to_string(), "http://10.0.0.5:8080/healthz");
    assert_eq!(url("").to_string(), "http://10.0.0.5:8080");
    assert_eq!(url("").target(), "/");
    assert_eq!(url("/a?b=1#frag").target(), "/a?b=1");
    let v6 = Url::new(Scheme::Https, "[fd00::5]", 443, "/x");
    assert_eq!(v6.to_string(), "https://[fd00::5]:443/x");
    assert_eq!(v6.host, "fd00::5");
}

#[test]
fn locations_resolve_against_the_current_url() {
    let base = url("/app/health?x=1");
    let cases = [
        ("/ready", Some("http://10.0.0.5:8080/ready")),
        ("ready", Some("http://10.0.0.5:8080/app/ready")),
        ("../ready?y=2", Some("http://10.0.0.5:8080/ready?y=2")),
        ("./", Some("http://10.0.0.5:8080/app/")),
        ("//other:81/z", Some("http://other:81/z")),
        (
            "https://10.0.0.5/secure",
            Some("https://10.0.0.5:443/secure"),
        ),
        ("http://Other.example", Some("http://Other.example:80/")),
        ("ftp://10.0.0.5/file", None),
    ];
    for (loc, want) in cases {
        assert_eq!(
            base.join(loc).map(|u| u.to_string()).as_deref(),
            want,
            "{loc}"
        );
    }
}

#[test]
fn kubelets_default_headers_fill_what_the_probe_left_out() {
    let plain = request_headers("10.0.0.5:8080", &[]);
    assert_eq!(
        plain,
        [
            ("Host", "10.0.0.5:8080"),
            ("User-Agent", USER_AGENT),
            ("Accept", "*/*"),
            ("Connection", "close"),
        ]
        .map(|(n, v)| (n.to_owned(), v.to_owned()))
    );
    let given = [
        ("Host".to_owned(), "app.local".to_owned()),
        ("user-agent".to_owned(), "mine".to_owned()),
        ("Accept".to_owned(), String::new()),
        ("X-Token".to_owned(), "t".to_owned()),
    ];
    assert_eq!(
        request_headers("app.local", &given),
        [
            ("Host", "app.local"),
            ("user-agent", "mine"),
            ("X-Token", "t"),
            ("Connection", "close"),
        ]
        .map(|(n, v)| (n.to_owned(), v.to_owned())),
        "an empty Accept removes it"
    );
    assert_eq!(host_header(&url("/"), &given), "app.local");
    assert_eq!(host_header(&url("/"), &[]), "10.0.0.5:8080");
}

#[test]
fn statuses_map_to_kubelets_outcomes() {
    assert_eq!(status_outcome(200, "ok"), Outcome::Success);
    assert_eq!(status_outcome(204, ""), Outcome::Success);
    assert_eq!(
        status_outcome(302, "moved"),
        Outcome::Warning("Probe terminated redirects, Response body: moved".into())
    );
    assert_eq!(
        status_outcome(500, "secret"),
        Outcome::Failure("HTTP probe failed with statuscode: 500".into())
    );
    assert_eq!(
        status_outcome(199, ""),
        Outcome::Failure("HTTP probe failed with statuscode: 199".into())
    );
    assert!(is_followed_redirect(307) && !is_followed_redirect(304));
}
