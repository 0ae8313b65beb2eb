use tart::Network;

use super::{interfaces_fact, network_unavailable, softnet_fact};

fn softnet() -> Network {
    Network::Softnet {
        allow: vec![],
        block: vec![],
        expose: vec![],
    }
}

#[test]
fn a_network_is_unavailable_only_when_its_softnet_fact_says_so() {
    let setuid = Some(("/s".to_string(), Ok((0, 0o104_755))));
    let plain = Some(("/s".to_string(), Ok((501, 0o100_755))));
    let missing = Some(("softnet".to_string(), Err("not on PATH".to_string())));
    let not_setuid = "/s is not root-owned and setuid: `tart run --net-softnet` will fail";
    let cases: [(Network, &super::SoftnetFact, Option<&str>); 9] = [
        (Network::Shared, &plain, None),
        (Network::Bridged("en0".into()), &plain, None),
        (softnet(), &setuid, None),
        (softnet(), &None, None),
        (softnet(), &plain, Some(not_setuid)),
        (Network::Host, &plain, Some(not_setuid)),
        (Network::Host, &setuid, None),
        (softnet(), &missing, Some("softnet: not on PATH")),
        (Network::Host, &missing, Some("softnet: not on PATH")),
    ];
    for (net, fact, want) in cases {
        assert_eq!(
            network_unavailable(&net, fact, &None).as_deref(),
            want,
            "{net:?} {fact:?}"
        );
    }
}

#[test]
fn a_bridged_network_needs_its_interface_when_the_interfaces_were_listed() {
    let en0 = Network::Bridged("en0".into());
    let en7 = Network::Bridged("en7".into());
    let listed = Some(vec!["en0".to_string(), "lo0".to_string()]);
    assert_eq!(network_unavailable(&en0, &None, &listed), None);
    assert_eq!(
        network_unavailable(&en7, &None, &listed).as_deref(),
        Some(
            "network interface \"en7\" does not exist on this Mac: `tart run --net-bridged` will fail"
        )
    );
    assert_eq!(
        network_unavailable(&en7, &None, &None),
        None,
        "not listed: not checked"
    );
    assert_eq!(network_unavailable(&softnet(), &None, &listed), None);
    assert_eq!(interfaces_fact(false), None);
    // getifaddrs answers on Linux too: the loopback is always there.
    assert!(
        interfaces_fact(true)
            .unwrap()
            .iter()
            .any(|i| i.starts_with("lo"))
    );
}

#[test]
fn the_softnet_program_is_the_configured_one_else_softnet_on_path_on_macos() {
    let dir = tempfile::tempdir().unwrap();
    let prog = dir.path().join("softnet");
    std::fs::write(&prog, "").unwrap();
    let path = std::env::join_paths([dir.path()]).unwrap();
    let configured = softnet_fact(Some(&prog), None, false).unwrap();
    assert_eq!(configured.0, prog.display().to_string());
    assert!(configured.1.is_ok());
    let found = softnet_fact(None, Some(&path), true).unwrap();
    assert_eq!(found.0, prog.display().to_string());
    let empty = tempfile::tempdir().unwrap();
    let nowhere = std::env::join_paths([empty.path()]).unwrap();
    let missing = softnet_fact(None, Some(&nowhere), true).unwrap();
    assert_eq!(missing.0, "softnet");
    assert!(missing.1.is_err());
    assert_eq!(softnet_fact(None, Some(&path), false), None);
}
