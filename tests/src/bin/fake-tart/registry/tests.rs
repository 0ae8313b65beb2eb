use super::*;

#[test]
fn tags_default_to_latest_and_ports_stay_in_the_host() {
    let r = Remote::parse("localhost:5000/org/img").unwrap();
    assert_eq!(r.host, "localhost:5000");
    assert_eq!(r.namespace, "org/img");
    assert_eq!(r.canonical(), "localhost:5000/org/img:latest");
    let r = Remote::parse("ghcr.io/cirruslabs/macos-tahoe-base:26.1").unwrap();
    assert_eq!(r.reference, Reference::Tag("26.1".into()));
}

#[test]
fn digests_parse_and_bad_names_are_runtime_errors() {
    let hex = "a".repeat(64);
    let r = Remote::parse(&format!("ghcr.io/x/y@sha256:{hex}")).unwrap();
    assert_eq!(r.reference, Reference::Digest(hex));
    for bad in [
        "ghcr.io/",
        "/x",
        "ghcr.io/x@sha256:zz",
        "ghcr.io/x:",
        "ghcr.io//x",
    ] {
        let err = Remote::parse(bad).unwrap_err();
        assert!(
            err.to_string().starts_with("failed to parse remote name: "),
            "{bad}"
        );
        assert_eq!(err.exit_code(), 1);
    }
}

#[test]
fn tag_digest_is_stable_64_hex_and_moves_with_revision() {
    let r = Remote::parse("ghcr.io/x/y:1").unwrap();
    let d0 = r.digest(&ImageKnob::default());
    assert_eq!(d0.len(), 64);
    assert_eq!(d0, r.digest(&ImageKnob::default()));
    let moved = ImageKnob {
        revision: Some(1),
        ..ImageKnob::default()
    };
    assert_ne!(d0, r.digest(&moved));
}

#[test]
fn missing_images_answer_404_exactly() {
    let r = Remote::parse("ghcr.io/x/y:1").unwrap();
    let img = ImageKnob {
        missing: Some(true),
        ..ImageKnob::default()
    };
    let text = check_manifest(&r, &img).unwrap_err().to_string();
    assert!(
        text.starts_with(
            "Error: UnexpectedHTTPStatusCode(when: \"pulling manifest\", code: 404, details: \""
        ),
        "{text}"
    );
}
