use super::*;

fn argv(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

#[test]
fn options_accept_space_and_equals_forms_interleaved_with_positionals() {
    let p = parse(
        spec("set").unwrap(),
        &argv("--cpu 8 vm1 --memory=4096 --random-mac"),
    )
    .unwrap();
    assert_eq!(p.positionals, ["vm1"]);
    assert_eq!(p.opt("cpu"), Some("8"));
    assert_eq!(p.opt("memory"), Some("4096"));
    assert!(p.flag("random-mac"));
}

#[test]
fn repeated_array_options_keep_every_value() {
    let p = parse(
        spec("run").unwrap(),
        &argv("vm --dir a:/x --dir b:/y:ro --no-graphics"),
    )
    .unwrap();
    assert_eq!(p.opts("dir"), ["a:/x", "b:/y:ro"]);
}

#[test]
fn exec_passes_everything_after_the_name_through() {
    let p = parse(spec("exec").unwrap(), &argv("-i vm echo --version -t")).unwrap();
    assert_eq!(p.positionals, ["vm", "echo", "--version", "-t"]);
    assert!(p.flag("interactive"));
    assert!(!p.flag("tty"));
}

#[test]
fn parse_errors_are_usage_errors_with_exit_64() {
    for (sub, args, msg) in [
        ("get", "", "Missing expected argument '<name>'"),
        ("get", "a b", "Unexpected argument 'b'"),
        ("get", "a --bogus", "Unknown option '--bogus'"),
        (
            "stop",
            "a --timeout",
            "Missing value for '--timeout <timeout>'",
        ),
    ] {
        let err = parse(spec(sub).unwrap(), &argv(args)).unwrap_err();
        assert_eq!(err.exit_code(), 64);
        let text = err.to_string();
        assert!(
            text.starts_with(&format!("Error: {msg}\nUsage: tart {sub}")),
            "{text}"
        );
    }
}

#[test]
fn short_flags_map_to_their_long_names() {
    let p = parse(spec("stop").unwrap(), &argv("vm -t 5")).unwrap();
    assert_eq!(p.opt("timeout"), Some("5"));
    let p = parse(spec("list").unwrap(), &argv("-q")).unwrap();
    assert!(p.flag("quiet"));
}
