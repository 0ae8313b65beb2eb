use super::*;

#[test]
fn the_stand_in_file_sets_only_the_keys_it_names() {
    assert_eq!(parse_file(""), Observed::default());
    let o = parse_file(
        "# host facts\ngui_session=none\nkeychain=locked # by hand\ndhcp_leases_used=250\n",
    );
    assert_eq!(o.gui_session, Some(None));
    assert_eq!(o.keychain, Some(Err("locked".into())));
    assert_eq!(o.dhcp_leases_used, Some(250));
    assert_eq!(o.softnet, None);
    let o = parse_file("gui_session=Aqua\nkeychain=ok\nsoftnet=ok\n");
    assert_eq!(o.gui_session, Some(Some("Aqua".into())));
    assert_eq!(o.keychain, Some(Ok(())));
    assert!(super::super::evaluate(&o, 2).is_empty());
}

#[tokio::test]
async fn a_missing_file_checks_nothing() {
    let s = Source::File("/nonexistent/host-checks".into());
    assert_eq!(s.observe(Duration::from_secs(1)).await, Observed::default());
}
