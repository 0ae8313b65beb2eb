use super::*;

#[test]
fn only_its_own_lease_means_the_node_itself() {
    let c = node_identity_check("mac-1", &Ok(true), &Ok(false));
    assert_eq!(c.status, Status::Ok, "{}", c.message);
    assert!(c.message.contains("system:node:mac-1"));
}

#[test]
fn another_node_s_credentials_fail_with_the_certificate_to_issue() {
    let c = node_identity_check("mac-1", &Ok(false), &Ok(false));
    assert_eq!(c.status, Status::Fail);
    assert!(c.fix.unwrap().contains("CN=system:node:mac-1"));
}

#[test]
fn credentials_for_every_lease_are_not_a_node() {
    let c = node_identity_check("mac-1", &Ok(true), &Ok(true));
    assert_eq!(c.status, Status::Warn);
    assert!(c.fix.unwrap().contains("--identity agent"));
}

#[test]
fn a_failed_review_fails_the_check() {
    let c = node_identity_check("mac-1", &Ok(true), &Err("timeout".into()));
    assert_eq!(c.status, Status::Fail);
    assert!(c.message.contains("timeout"));
}
