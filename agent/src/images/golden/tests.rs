use super::*;

const D: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

#[test]
fn a_golden_is_named_from_its_digest_and_fits_any_pod_prefix() {
    let g = golden_name("tkl-", D).unwrap();
    assert_eq!(g.as_str(), "tkl-golden-0123456789abcdef0123456789abc");
    // The longest prefix a Pod VM allows still gives a valid golden name.
    let long = "p".repeat(VmName::MAX_LEN - 36);
    let g = golden_name(&long, D).unwrap();
    assert_eq!(g.as_str().len(), VmName::MAX_LEN);
    assert!(golden_name(&format!("{long}x"), D).is_none());
}

#[test]
fn only_sha256_digests_name_goldens() {
    for bad in [
        "",
        "sha256:abc",
        "sha512:00",
        "latest",
        &D.replace('a', "g"),
    ] {
        assert_eq!(golden_name("tkl-", bad), None, "{bad}");
    }
}

#[test]
fn golden_names_are_recognised_and_matched_to_their_digest() {
    let g = golden_name("tkl-", D).unwrap();
    let hex = golden_hex("tkl-", g.as_str()).unwrap();
    assert!(is_golden_of(hex, D));
    assert!(!is_golden_of(hex, &D.replace('0', "f")));
    // A Pod VM and another prefix's golden are not ours.
    assert_eq!(
        golden_hex("tkl-", "tkl-8c2f1e0a-1111-2222-3333-444455556666"),
        None
    );
    assert_eq!(golden_hex("other-", g.as_str()), None);
}
