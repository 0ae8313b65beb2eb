use super::*;

#[test]
fn the_request_name_is_stable_per_key_and_a_valid_object_name() {
    assert_eq!(request_name("mac-1", "0a1b2c3d"), "mac-1.serving-0a1b2c3d");
    let long = "n".repeat(253);
    let name = request_name(&long, "0a1b2c3d");
    assert!(
        name.len() <= 253 && name.ends_with(".serving-0a1b2c3d"),
        "{name}"
    );
}

#[test]
fn the_pending_event_is_a_warning_naming_the_request_and_the_approval_command() {
    let e = event(Reason::Pending, "mac-1.serving-0a", "");
    assert!(e.warning);
    assert_eq!(e.reason, "ServingCertificatePending");
    assert!(
        e.message
            .contains("certificate signing request mac-1.serving-0a ")
            && e.message.contains("is pending approval")
            && e.message
                .contains("kubectl certificate approve mac-1.serving-0a"),
        "{}",
        e.message
    );
    let e = event(Reason::Issued, "c", "2027-01-01T00:00:00Z");
    assert!(!e.warning && e.message.contains("valid until 2027-01-01T00:00:00Z"));
    assert!(event(Reason::Denied, "c", "r").warning);
}
