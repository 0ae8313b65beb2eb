use super::*;
use crate::{
    hostcheck::{Failure, HostCheck},
    node::health::{HostFault, TartProbe},
};
use CordonAction::*;

fn snap(checks: &[HostCheck], quarantined: bool) -> HealthSnapshot {
    let now = tokio::time::Instant::now();
    HealthSnapshot {
        probe: TartProbe::Ok {
            version: "2.35.0".into(),
        },
        fault: quarantined.then_some(HostFault {
            kind: tart::ErrorKind::AuxStorageLocked,
            count: 3,
            since: now,
            until: now,
        }),
        checks: checks
            .iter()
            .map(|&check| Failure {
                check,
                message: "found".into(),
            })
            .collect(),
        unavailable_profiles: Default::default(),
        checked: true,
    }
}

#[test]
fn host_checks_name_the_block_before_the_quarantine() {
    let cases: &[(&[HostCheck], bool, Option<&str>)] = &[
        (&[], false, None),
        (&[], true, Some("AuxiliaryStorageLocked")),
        (&[HostCheck::GuiSession], false, Some("NoGUISession")),
        (
            &[HostCheck::Keychain, HostCheck::DhcpLeases],
            true,
            Some("KeychainNotUsable"),
        ),
        (&[HostCheck::DhcpLeases], false, Some("DHCPLeasesExhausted")),
    ];
    for (checks, q, want) in cases {
        assert_eq!(
            block(&snap(checks, *q)).map(|b| b.reason),
            *want,
            "{checks:?} {q}"
        );
    }
    let b = block(&snap(&[HostCheck::Keychain, HostCheck::DhcpLeases], false)).unwrap();
    assert!(
        b.message.contains("keychain: found; dhcp_leases: found"),
        "{}",
        b.message
    );
}

#[test]
fn an_operators_cordon_is_never_lifted_nor_claimed() {
    // (want, unschedulable, ours) -> action
    let cases = [
        ((true, false, false), Cordon),
        ((true, false, true), Cordon),
        ((true, true, true), Keep),
        ((true, true, false), Keep),
        ((false, true, true), Uncordon),
        ((false, false, true), Forget),
        ((false, true, false), Keep),
        ((false, false, false), Keep),
    ];
    for ((want, unsched, ours), action) in cases {
        assert_eq!(
            cordon_action(want, unsched, ours),
            action,
            "{want} {unsched} {ours}"
        );
    }
}

#[test]
fn patches_carry_the_annotation_and_the_precondition() {
    assert_eq!(cordon_patch(Keep, "x", Some("1")), None);
    assert_eq!(
        cordon_patch(Cordon, "NoGUISession", Some("7")).unwrap(),
        json!({"metadata": {"annotations": {CORDON_ANNOTATION: "NoGUISession"}, "resourceVersion": "7"},
                   "spec": {"unschedulable": true}})
    );
    assert_eq!(
        cordon_patch(Uncordon, "", None).unwrap(),
        json!({"metadata": {"annotations": {CORDON_ANNOTATION: null}}, "spec": {"unschedulable": false}})
    );
    assert_eq!(
        cordon_patch(Forget, "", None).unwrap(),
        json!({"metadata": {"annotations": {CORDON_ANNOTATION: null}}})
    );
}
