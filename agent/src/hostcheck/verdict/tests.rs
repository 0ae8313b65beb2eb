use super::*;

#[test]
fn only_an_aqua_session_passes() {
    let cases = [
        (Some("Aqua"), false),
        (Some("Background"), true),
        (Some("LoginWindow"), true),
        (None, true),
    ];
    for (session, fails) in cases {
        assert_eq!(gui_session_failure(session).is_some(), fails, "{session:?}");
    }
}

#[test]
fn leases_fail_when_the_free_addresses_drop_under_the_headroom() {
    let cases = [
        (0, 2, false),
        (251, 2, false),
        (252, 2, true),
        (253, 2, true),
        (300, 2, true),
        (252, 1, false),
    ];
    for (used, min_free, fails) in cases {
        assert_eq!(
            dhcp_leases_failure(used, min_free).is_some(),
            fails,
            "{used} used, {min_free} needed"
        );
    }
    assert!(dhcp_leases_failure(253, 2).unwrap().contains("0 free"));
}

#[test]
fn keychain_and_softnet_verdicts() {
    assert_eq!(keychain_failure(Ok(&())), None);
    assert!(
        keychain_failure(Err(&"locked".to_string()))
            .unwrap()
            .contains("locked")
    );
    assert_eq!(softnet_failure("/s", Ok((0, 0o104755))), None);
    assert!(softnet_failure("/s", Ok((0, 0o100755))).is_some());
    assert!(softnet_failure("/s", Ok((501, 0o104755))).is_some());
    assert!(softnet_failure("/s", Err("not found".into())).is_some());
}
