use super::*;

const UID: &str = "3f2c1a9e-5b7d-4e21-9a0b-c1d2e3f4a5b6";

#[test]
fn name_is_prefix_then_uid_and_round_trips() {
    let n = VmNaming::default();
    let vm = n.vm_name(UID).unwrap();
    assert_eq!(vm.as_str(), format!("tkl-{UID}"));
    assert_eq!(n.pod_uid(vm.as_str()), Some(UID));
}

#[test]
fn uppercase_uid_is_normalised() {
    let n = VmNaming::default();
    let vm = n.vm_name(&UID.to_ascii_uppercase()).unwrap();
    assert_eq!(n.pod_uid(vm.as_str()), Some(UID));
}

#[test]
fn longest_prefix_still_fits_tart_limit() {
    let p = "p".repeat(VmNaming::MAX_PREFIX_LEN);
    let n = VmNaming::new(p).unwrap();
    assert_eq!(n.vm_name(UID).unwrap().as_str().len(), VmName::MAX_LEN);
    assert!(VmNaming::new("p".repeat(VmNaming::MAX_PREFIX_LEN + 1)).is_err());
}

#[test]
fn bad_prefixes_are_rejected() {
    for p in ["", "-x", ".x", "a/b", "a b", "ä-"] {
        assert!(VmNaming::new(p).is_err(), "{p:?} accepted");
    }
}

#[test]
fn non_uuid_uid_is_rejected() {
    let n = VmNaming::default();
    for u in ["", "abc", "../../etc", &UID[..35], &format!("{UID}0")] {
        assert!(n.vm_name(u).is_err(), "{u:?} accepted");
    }
}

#[test]
fn foreign_vms_are_never_ours() {
    let n = VmNaming::default();
    for vm in [
        "macos-sequoia",
        "tkl-",
        "tkl-runner-1",
        &format!("tkl-{UID}-copy"),
        &format!("xtkl-{UID}"),
        &format!("tkl-{}", UID.to_ascii_uppercase()),
        "ghcr.io/cirruslabs/macos:latest",
    ] {
        assert!(!n.is_ours(vm), "{vm:?} claimed");
    }
    assert!(n.is_ours(&format!("tkl-{UID}")));
}

#[test]
fn another_prefix_does_not_claim_our_vms() {
    let ours = VmNaming::default().vm_name(UID).unwrap();
    let other = VmNaming::new("ci-").unwrap();
    assert!(!other.is_ours(ours.as_str()));
}
