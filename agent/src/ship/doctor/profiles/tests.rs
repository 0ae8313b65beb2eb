use std::collections::BTreeMap;

use tart::Network;

use super::profile_checks;
use crate::{
    config::{VmProfile, VmProfiles},
    ship::doctor::checks::Status,
};

fn profiles() -> VmProfiles {
    let softnet = VmProfile {
        network: Network::Softnet {
            allow: vec![],
            block: vec![],
            expose: vec![],
        },
        ..VmProfile::default()
    };
    VmProfiles::new(
        BTreeMap::from([
            ("isolated".to_owned(), softnet),
            ("plain".to_owned(), VmProfile::default()),
        ]),
        None,
    )
}

#[test]
fn each_profile_is_a_row_and_one_this_mac_cannot_run_fails_naming_it() {
    let plain = Some(("/s".to_owned(), Ok((501, 0o100_755))));
    let rows = profile_checks(&profiles(), &plain, &None);
    let got: Vec<(&str, Status, &str)> = rows
        .iter()
        .map(|c| (c.name, c.status, c.message.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            (
                "vm-profile",
                Status::Fail,
                "VM profile \"isolated\" is unavailable: /s is not root-owned and setuid: \
                 `tart run --net-softnet` will fail; the Node will not advertise it and its \
                 Pods wait"
            ),
            (
                "vm-profile",
                Status::Ok,
                "VM profile \"plain\" can run on this Mac"
            ),
        ]
    );
    assert!(rows[0].fix.is_some());
    let setuid = Some(("/s".to_owned(), Ok((0, 0o104_755))));
    assert!(
        profile_checks(&profiles(), &setuid, &None)
            .iter()
            .all(|c| c.status == Status::Ok)
    );
}
