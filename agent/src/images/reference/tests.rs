use super::*;

#[test]
fn common_references_parse() {
    let r = ImageRef::parse("ghcr.io/cirruslabs/macos-sequoia-xcode:16.1").unwrap();
    assert_eq!(r.host, "ghcr.io");
    assert_eq!(r.repository, "cirruslabs/macos-sequoia-xcode");
    assert_eq!(r.tag.as_deref(), Some("16.1"));
    assert_eq!(
        r.cache_name(),
        "ghcr.io/cirruslabs/macos-sequoia-xcode:16.1"
    );

    let r = ImageRef::parse("localhost:5000/ns/img").unwrap();
    assert_eq!(r.host, "localhost:5000");
    assert_eq!(r.tag, None);
    assert_eq!(r.cache_name(), "localhost:5000/ns/img:latest");

    let d = format!("sha256:{}", "a".repeat(64));
    let r = ImageRef::parse(&format!("registry.example.com/a/b@{d}")).unwrap();
    assert_eq!(r.digest.as_deref(), Some(d.as_str()));
    assert_eq!(r.default_pull_policy(), PullPolicy::IfNotPresent);
}

#[test]
fn non_remote_or_hostile_names_are_invalid() {
    for img in [
        "",
        "macos-base",
        "ubuntu:22.04",
        "library/ubuntu",
        "-x.io/a",
        "ghcr.io/",
        "ghcr.io/A/B",
        "ghcr.io/a:",
        "ghcr.io/a@sha256:abc",
        "ghcr.io/a/$(touch x)",
        "ghcr.io/a;rm -rf /",
        "ghcr.io/a\nb",
        "ghcr.io/a b",
        "ghcr.io/a:\"q\"",
        "host:99999999/a",
    ] {
        assert!(ImageRef::parse(img).is_err(), "{img:?} accepted");
    }
}

#[test]
fn latest_or_untagged_defaults_to_always() {
    for img in ["ghcr.io/a/b", "ghcr.io/a/b:latest"] {
        assert_eq!(
            ImageRef::parse(img).unwrap().default_pull_policy(),
            PullPolicy::Always
        );
    }
    assert_eq!(
        ImageRef::parse("ghcr.io/a/b:1")
            .unwrap()
            .default_pull_policy(),
        PullPolicy::IfNotPresent
    );
}

#[test]
fn pull_decision_follows_policy() {
    use PullDecision::*;
    use PullPolicy::*;
    assert_eq!(pull_decision(Always, true), Pull);
    assert_eq!(pull_decision(Always, false), Pull);
    assert_eq!(pull_decision(IfNotPresent, true), UseCached);
    assert_eq!(pull_decision(IfNotPresent, false), Pull);
    assert_eq!(pull_decision(Never, true), UseCached);
    assert_eq!(pull_decision(Never, false), NeverPullMissing);
}
