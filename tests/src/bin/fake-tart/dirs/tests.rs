use super::*;

fn p(spec: &str) -> Result<Share, Failure> {
    parse(spec, Path::new("/cwd"))
}

fn share(name: Option<&str>, path: &str, read_only: bool, tag: &str) -> Share {
    Share {
        name: name.map(str::to_owned),
        path: path.into(),
        read_only,
        tag: tag.into(),
    }
}

#[test]
fn each_syntax_form_parses() {
    let auto = AUTOMOUNT_TAG;
    let cases = [
        ("/a", share(None, "/a", false, auto)),
        ("/a:ro", share(None, "/a", true, auto)),
        ("n:/a", share(Some("n"), "/a", false, auto)),
        ("n:/a:ro", share(Some("n"), "/a", true, auto)),
        ("n:/a:tag=t", share(Some("n"), "/a", false, "t")),
        ("n:/a:ro,tag=t", share(Some("n"), "/a", true, "t")),
        ("/a:tag=t,ro", share(None, "/a", true, "t")),
        ("rel", share(None, "/cwd/rel", false, auto)),
    ];
    for (spec, want) in cases {
        assert_eq!(p(spec).unwrap(), want, "{spec}");
    }
}

#[test]
fn malformed_values_are_usage_errors() {
    for spec in [
        "",
        ":/a",
        "n:",
        "n:/a:rw",
        "n:/a:ro:x",
        "n:/a:tag=",
        "a,b:/x",
    ] {
        let err = p(spec).unwrap_err();
        assert_eq!(err.exit_code(), 64, "{spec}");
        assert!(
            err.to_string().starts_with("Error: invalid --dir syntax: "),
            "{spec}"
        );
    }
}

#[test]
fn several_shares_under_one_tag_must_all_be_named() {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let cwd = Path::new("/");
    assert!(parse_all(&s(&["/a"]), cwd).is_ok());
    assert!(parse_all(&s(&["a:/a", "b:/b:ro"]), cwd).is_ok());
    assert!(parse_all(&s(&["/a:tag=x", "/b:tag=y"]), cwd).is_ok());
    let err = parse_all(&s(&["a:/a", "/b"]), cwd).unwrap_err();
    assert_eq!(err.exit_code(), 64);
    assert!(err.to_string().starts_with(
            "Error: invalid --dir syntax: for multiple directory shares each one of them should be named"
        ));
    assert!(parse_all(&s(&["a:/a", "a:/b"]), cwd).is_err());
}
