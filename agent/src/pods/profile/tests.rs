use std::collections::BTreeMap;

use tart::{DiskCaching, Network, RootDiskOpts};

use super::{ClassLookup, ProfileWait, choose};
use crate::config::{VmProfile, VmProfiles};

fn softnet() -> VmProfile {
    VmProfile {
        network: Network::Softnet {
            allow: vec!["10.0.0.0/8".into()],
            block: vec![],
            expose: vec![],
        },
        root_disk: RootDiskOpts::default(),
    }
}

fn cached() -> VmProfile {
    VmProfile {
        network: Network::Shared,
        root_disk: RootDiskOpts {
            sync: None,
            caching: Some(DiskCaching::Cached),
        },
    }
}

fn profiles(default: Option<&str>) -> VmProfiles {
    VmProfiles::new(
        BTreeMap::from([
            ("isolated".to_owned(), softnet()),
            ("fast-disk".to_owned(), cached()),
        ]),
        default.map(str::to_owned),
    )
}

/// The cluster's RuntimeClasses: name → handler.
fn classes(name: &str) -> ClassLookup {
    match name {
        "ci-isolated" => ClassLookup::Handler("isolated".into()),
        "fast" => ClassLookup::Handler("fast-disk".into()),
        "kata" => ClassLookup::Handler("kata".into()),
        _ => ClassLookup::NotFound,
    }
}

#[test]
fn the_runtime_class_handler_picks_the_profile_or_says_why_the_pod_waits() {
    let down = BTreeMap::from([(
        "isolated".to_owned(),
        "softnet is not setuid root".to_owned(),
    )]);
    let none = BTreeMap::new();
    let cases: Vec<(
        Option<&str>,
        Option<&str>,
        &BTreeMap<String, String>,
        Result<VmProfile, ProfileWait>,
    )> = vec![
        // No RuntimeClass: the built-in default, or the configured default profile.
        (None, None, &none, Ok(VmProfile::default())),
        (Some(""), None, &none, Ok(VmProfile::default())),
        (None, Some("fast-disk"), &none, Ok(cached())),
        // A RuntimeClass whose handler has a profile.
        (Some("ci-isolated"), None, &none, Ok(softnet())),
        (Some("fast"), Some("isolated"), &none, Ok(cached())),
        // Missing class, unserved handler.
        (
            Some("gone"),
            None,
            &none,
            Err(ProfileWait::ClassNotFound {
                class: "gone".into(),
            }),
        ),
        (
            Some("kata"),
            None,
            &none,
            Err(ProfileWait::Unserved {
                class: "kata".into(),
                handler: "kata".into(),
            }),
        ),
        // A profile this Mac cannot run now, named or as the default.
        (
            Some("ci-isolated"),
            None,
            &down,
            Err(ProfileWait::Unavailable {
                handler: "isolated".into(),
                why: "softnet is not setuid root".into(),
            }),
        ),
        (
            None,
            Some("isolated"),
            &down,
            Err(ProfileWait::Unavailable {
                handler: "isolated".into(),
                why: "softnet is not setuid root".into(),
            }),
        ),
        (Some("fast"), None, &down, Ok(cached())),
    ];
    for (class, default, unavailable, want) in cases {
        assert_eq!(
            choose(class, classes, &profiles(default), unavailable),
            want,
            "{class:?} default {default:?}"
        );
    }
}

#[test]
fn wait_messages_use_kubelet_and_containerd_words() {
    let cases = [
        (
            ProfileWait::ClassNotFound { class: "x".into() },
            "runtimeclass.node.k8s.io \"x\" not found",
        ),
        (
            ProfileWait::Unserved {
                class: "x".into(),
                handler: "h".into(),
            },
            "no VM profile for handler \"h\" (RuntimeClass \"x\") is configured on this node",
        ),
        (
            ProfileWait::Unavailable {
                handler: "h".into(),
                why: "no interface en9".into(),
            },
            "VM profile \"h\" is unavailable on this node: no interface en9",
        ),
    ];
    for (wait, want) in cases {
        assert_eq!(wait.message(), want);
    }
}
