//! Tests of [`super`] against the texts of docs/reference/tart-cli.md §2.

use super::*;

#[test]
fn list_parses_current_format_with_int_size_and_accessed() {
    let text = r#"[
  {
    "Source" : "local",
    "Name" : "my-tahoe",
    "Disk" : 50,
    "Size" : 25,
    "Accessed" : "2026-08-18T12:34:56Z",
    "Running" : false,
    "State" : "stopped"
  },
  {
    "State" : "running",
    "Running" : true,
    "Name" : "ghcr.io/cirruslabs/macos-tahoe-base:latest",
    "Source" : "OCI",
    "Disk" : 50,
    "Size" : 21,
    "Accessed" : "2026-08-18T12:00:00Z"
  }
]"#;
    let l = list(text).unwrap();
    assert_eq!(l.len(), 2);
    assert_eq!(l[0].source, Source::Local);
    assert_eq!(l[0].name, "my-tahoe");
    assert_eq!(l[0].disk_gb, 50);
    assert_eq!(l[0].size_gb, 25.0);
    assert_eq!(l[0].accessed.as_deref(), Some("2026-08-18T12:34:56Z"));
    assert_eq!(l[0].state, VmState::Stopped);
    assert_eq!(l[1].source, Source::Oci);
    assert_eq!(l[1].state, VmState::Running);
}

#[test]
fn list_accepts_legacy_lowercase_oci_size_on_disk_and_running_bool() {
    let text = r#"[{"Source":"oci","Name":"ghcr.io/a/b:1","Disk":20,"Size":3,"SizeOnDisk":3,"Running":true},
                   {"Source":"Local","Name":"x","Disk":20,"Size":3,"Running":false}]"#;
    let l = list(text).unwrap();
    assert_eq!(l[0].source, Source::Oci);
    assert_eq!(l[0].state, VmState::Running);
    assert_eq!(l[0].accessed, None);
    assert_eq!(l[1].source, Source::Local);
    assert_eq!(l[1].state, VmState::Stopped);
}

#[test]
fn list_of_nothing_is_empty_in_any_whitespace() {
    assert!(list("[\n\n]").unwrap().is_empty());
    assert!(list("[]\n").unwrap().is_empty());
}

#[test]
fn list_rejects_non_json_and_unknown_source() {
    assert!(matches!(list(""), Err(ParseError::Json { .. })));
    assert!(matches!(
        list(r#"[{"Source":"ipsw","Name":"x"}]"#),
        Err(ParseError::Json { .. })
    ));
    assert!(matches!(
        list(r#"{"Name":"x"}"#),
        Err(ParseError::Json { .. })
    ));
}

#[test]
fn get_parses_size_string_and_missing_disk_format() {
    let text = r#"{
  "CPU" : 4,
  "Display" : "1024x768",
  "Disk" : 50,
  "Memory" : 8192,
  "OS" : "darwin",
  "Running" : true,
  "Size" : "21.345",
  "State" : "running"
}"#;
    let d = get(text).unwrap();
    assert_eq!(d.cpu, 4);
    assert_eq!(d.memory_mib, 8192);
    assert_eq!(d.disk_gb, 50);
    assert_eq!(d.disk_format, "raw");
    assert!((d.size_gb - 21.345).abs() < 1e-9);
    assert_eq!(d.display, "1024x768");
    assert_eq!(d.os, "darwin");
    assert_eq!(d.state, VmState::Running);
}

#[test]
fn get_reads_asif_suspended_and_legacy_running() {
    let d = get(r#"{"OS":"linux","CPU":2,"Memory":4096,"Disk":20,"DiskFormat":"asif","Size":"0.500","Display":"1920x1080px","State":"suspended"}"#).unwrap();
    assert_eq!(d.disk_format, "asif");
    assert_eq!(d.state, VmState::Suspended);
    assert_eq!(d.display, "1920x1080px");
    let d = get(r#"{"CPU":2,"Memory":4096,"Disk":20,"Size":"1.000","Running":true}"#).unwrap();
    assert_eq!(d.state, VmState::Running);
}

#[test]
fn a_size_that_is_not_a_finite_number_is_unknown() {
    for size in [r#""inf""#, r#""NaN""#, r#""20.1e308000""#, r#""-inf""#] {
        let d = get(&format!(r#"{{"CPU":2,"Size":{size}}}"#)).unwrap();
        assert_eq!(d.size_gb, 0.0, "{size}");
        let l = list(&format!(
            r#"[{{"Source":"local","Name":"x","Size":{size}}}]"#
        ))
        .unwrap();
        assert_eq!(l[0].size_gb, 0.0, "{size}");
    }
    assert_eq!(get(r#"{"Size":"21.5"}"#).unwrap().size_gb, 21.5);
}

#[test]
fn ip_takes_first_line() {
    assert_eq!(
        ip("192.168.64.7\n").unwrap(),
        "192.168.64.7".parse::<Ipv4Addr>().unwrap()
    );
    assert_eq!(ip("\n 10.0.0.2 \nx\n").unwrap().octets(), [10, 0, 0, 2]);
    assert_eq!(ip("no IP address found"), Err(ParseError::NoIp));
    assert_eq!(ip(""), Err(ParseError::NoIp));
}

#[test]
fn version_parses_release_and_snapshot() {
    assert_eq!(version("2.35.0\n").semver, Some((2, 35, 0)));
    assert_eq!(version("2.35.0\n").raw, "2.35.0");
    assert_eq!(version("SNAPSHOT").semver, None);
    assert_eq!(version("SNAPSHOT").raw, "SNAPSHOT");
    assert_eq!(version("2.35.0-8-g16d186c").semver, Some((2, 35, 0)));
    assert_eq!(version("garbage").semver, None);
}

#[test]
fn pull_lines_from_the_spec_are_classified() {
    use PullLine::*;
    let cases: &[(&str, PullLine)] = &[
        (
            "pulling ghcr.io/cirruslabs/macos-tahoe-base:latest...",
            Pulling("ghcr.io/cirruslabs/macos-tahoe-base:latest".into()),
        ),
        ("pulling manifest...", Manifest),
        ("waiting for lock...", WaitingForLock),
        (
            "found an image ghcr.io/a/b:1 that will allow us to avoid fetching 3 GB, will try use it...",
            Deduplicating,
        ),
        (
            "pulling disk (25.3 GB compressed)...",
            Disk {
                compressed_gb: Some(25.3),
            },
        ),
        ("0%", Percent(0)),
        ("42%", Percent(42)),
        ("100%", Percent(100)),
        ("pulling NVRAM...", Nvram),
        (
            "ghcr.io/a/b@sha256:0123 image is already cached and linked!",
            AlreadyCached,
        ),
        (
            "ghcr.io/a/b@sha256:0123 image is already cached! creating a symlink...",
            AlreadyCached,
        ),
        (
            "Error pulling image: \"The request timed out.\", attempting to re-try...",
            Retrying("Error pulling image: \"The request timed out.\", attempting to re-try...".into()),
        ),
        (
            "Error pulling disk layer 3: \"The network connection was lost.\", attempting to re-try...",
            Retrying("Error pulling disk layer 3: \"The network connection was lost.\", attempting to re-try...".into()),
        ),
        ("something else", Other("something else".into())),
        ("\u{fffd}\u{fffd}", Other("\u{fffd}\u{fffd}".into())),
    ];
    for (line, want) in cases {
        assert_eq!(&pull_line(line), want, "line {line:?}");
    }
}

#[test]
fn tag_links_stay_inside_the_cache_and_encode_the_port() {
    let home = std::path::Path::new("/h");
    assert_eq!(
        tag_link(home, "localhost:5000", "ns/img", "v1").unwrap(),
        std::path::Path::new("/h/cache/OCIs/localhost%3A5000/ns/img/v1")
    );
    for (host, repo, tag) in [
        ("..", "x", "t"),
        ("h", "x/../../..", "t"),
        ("h", "x", ".."),
        ("h", "x", "a/b"),
        ("h/i", "x", "t"),
        ("h", "", "t"),
    ] {
        assert_eq!(tag_link(home, host, repo, tag), None, "{host} {repo} {tag}");
    }
}

#[test]
fn only_sha256_names_are_digests() {
    let d = format!("sha256:{}", "ab".repeat(32));
    assert_eq!(digest_name(&d), Some(d.clone()));
    assert_eq!(digest_name("sha256:abc"), None);
    assert_eq!(digest_name(&d.to_uppercase()), None);
    assert_eq!(digest_name("latest"), None);
}
