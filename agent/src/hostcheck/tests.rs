use super::*;

#[test]
fn label_values_are_the_agreed_closed_set() {
    let all: Vec<_> = HostCheck::ALL.iter().map(|c| c.as_str()).collect();
    assert_eq!(all, ["gui_session", "keychain", "dhcp_leases", "softnet"]);
}

#[test]
fn evaluate_reports_only_checked_and_failing_checks_in_order() {
    let cases: &[(Observed, &[HostCheck])] = &[
        (Observed::default(), &[]),
        (
            Observed {
                gui_session: Some(Some("Aqua".into())),
                keychain: Some(Ok(())),
                dhcp_leases_used: Some(10),
                softnet: Some(("/s".into(), Ok((0, 0o104755)))),
            },
            &[],
        ),
        (
            Observed {
                gui_session: Some(None),
                keychain: Some(Err("locked".into())),
                dhcp_leases_used: Some(252),
                softnet: Some(("/s".into(), Ok((501, 0o100755)))),
            },
            &HostCheck::ALL,
        ),
        (
            Observed {
                gui_session: Some(Some("Background".into())),
                dhcp_leases_used: Some(251),
                ..Observed::default()
            },
            &[HostCheck::GuiSession],
        ),
    ];
    for (obs, want) in cases {
        let got: Vec<_> = evaluate(obs, 2).iter().map(|f| f.check).collect();
        assert_eq!(&got, want, "{obs:?}");
    }
}
