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

/// (the Pod's class, `default_vm_profile`, what the Pod gets).
type Case<'a> = (
    Option<&'a str>,
    Option<&'a str>,
    Result<VmProfile, ProfileWait>,
);

#[test]
fn the_runtime_class_handler_picks_the_profile_or_says_why_the_pod_waits() {
    let cases: Vec<Case<'_>> = vec![
        // No RuntimeClass: the built-in default, or the configured default profile.
        (None, None, Ok(VmProfile::default())),
        (Some(""), None, Ok(VmProfile::default())),
        (None, Some("fast-disk"), Ok(cached())),
        // A RuntimeClass whose handler has a profile.
        (Some("ci-isolated"), None, Ok(softnet())),
        (Some("fast"), Some("isolated"), Ok(cached())),
        // Missing class, unserved handler.
        (
            Some("gone"),
            None,
            Err(ProfileWait::ClassNotFound {
                class: "gone".into(),
            }),
        ),
        (
            Some("kata"),
            None,
            Err(ProfileWait::Unserved {
                class: "kata".into(),
                handler: "kata".into(),
            }),
        ),
    ];
    for (class, default, want) in cases {
        assert_eq!(
            choose(class, classes, &profiles(default), &BTreeMap::new()),
            want,
            "{class:?} default {default:?}"
        );
    }
}

#[test]
fn a_profile_this_mac_cannot_run_makes_its_pods_wait_and_leaves_the_others() {
    let why = "/s is not root-owned and setuid";
    let unavailable = BTreeMap::from([("isolated".to_owned(), why.to_owned())]);
    let wait = Err(ProfileWait::Unavailable {
        handler: "isolated".into(),
        why: why.into(),
    });
    let cases: Vec<Case<'_>> = vec![
        (Some("ci-isolated"), None, wait.clone()),
        // The default profile of Pods without a RuntimeClass is checked too.
        (None, Some("isolated"), wait),
        (Some("fast"), None, Ok(cached())),
        (None, None, Ok(VmProfile::default())),
    ];
    for (class, default, want) in cases {
        assert_eq!(
            choose(class, classes, &profiles(default), &unavailable),
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
                why: "softnet: not on PATH".into(),
            },
            "VM profile \"h\" is unavailable on this node: softnet: not on PATH",
        ),
    ];
    for (wait, want) in cases {
        assert_eq!(wait.message(), want);
    }
}
