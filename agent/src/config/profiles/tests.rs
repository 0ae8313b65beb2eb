use std::collections::BTreeMap;

use tart::{DiskCaching, DiskSync, Network, RootDiskOpts};

use super::{ProfileArgs, ProfileError, VmProfile, resolve};

fn strings(v: &[&str]) -> Option<Vec<String>> {
    Some(v.iter().map(|s| (*s).to_owned()).collect())
}

/// The profile, or `<profile>: <field>: <message>`.
fn one(name: &str, a: ProfileArgs) -> Result<VmProfile, String> {
    match resolve(BTreeMap::from([(name.to_owned(), a)]), None) {
        Ok(profiles) => Ok(profiles.get(name).unwrap().clone()),
        Err(ProfileError::Field {
            profile,
            field,
            message,
        }) => Err(format!("{profile}: {field}: {message}")),
        Err(e) => panic!("{e:?}"),
    }
}

fn net(w: &str) -> ProfileArgs {
    ProfileArgs {
        network: Some(w.into()),
        ..ProfileArgs::default()
    }
}

#[test]
fn each_network_word_gives_its_network() {
    let cases = [
        ("shared", Network::Shared),
        ("host", Network::Host),
        ("bridged:en0", Network::Bridged("en0".into())),
        ("bridged:bridge100", Network::Bridged("bridge100".into())),
        (
            "softnet",
            Network::Softnet {
                allow: vec![],
                block: vec![],
                expose: vec![],
            },
        ),
    ];
    for (word, want) in cases {
        assert_eq!(one("p", net(word)).unwrap().network, want, "{word}");
    }
    assert_eq!(
        one("p", ProfileArgs::default()).unwrap(),
        VmProfile::default()
    );
}

#[test]
fn softnet_lists_and_disk_options_are_kept() {
    let a = ProfileArgs {
        network: Some("softnet".into()),
        softnet_allow: strings(&["10.0.0.0/8", "fd00::/8"]),
        softnet_block: strings(&["192.168.1.10/32"]),
        softnet_expose: strings(&["2222:22"]),
        root_disk_sync: Some("none".into()),
        root_disk_caching: Some("cached".into()),
    };
    assert_eq!(
        one("isolated", a).unwrap(),
        VmProfile {
            network: Network::Softnet {
                allow: vec!["10.0.0.0/8".into(), "fd00::/8".into()],
                block: vec!["192.168.1.10/32".into()],
                expose: vec!["2222:22".into()],
            },
            root_disk: RootDiskOpts {
                sync: Some(DiskSync::None),
                caching: Some(DiskCaching::Cached),
            },
        }
    );
}

#[test]
fn a_bad_profile_names_the_profile_and_the_field() {
    let softnet = |f: fn(&mut ProfileArgs)| {
        let mut a = net("softnet");
        f(&mut a);
        a
    };
    let cases: Vec<(&str, ProfileArgs, &str)> = vec![
        ("Bad_Name", ProfileArgs::default(), "Bad_Name: name:"),
        ("-x", ProfileArgs::default(), "-x: name:"),
        ("p", net("nat"), "p: network: \"nat\" is not one of"),
        ("p", net("bridged:"), "p: network: bridged interface"),
        ("p", net("bridged:en0 en1"), "p: network: bridged interface"),
        ("p", net("bridged:verylonginterface0"), "p: network:"),
        (
            "p",
            softnet(|a| a.softnet_allow = strings(&["10.0.0.0"])),
            "p: softnet_allow: \"10.0.0.0\" is not a CIDR",
        ),
        (
            "p",
            softnet(|a| a.softnet_block = strings(&["10.0.0.0/33"])),
            "p: softnet_block:",
        ),
        (
            "p",
            softnet(|a| a.softnet_expose = strings(&["22"])),
            "p: softnet_expose: \"22\" is not",
        ),
        (
            "p",
            softnet(|a| a.softnet_expose = strings(&["0:22"])),
            "p: softnet_expose:",
        ),
        (
            "p",
            softnet(|a| a.softnet_expose = strings(&["70000:22"])),
            "p: softnet_expose:",
        ),
        (
            "p",
            ProfileArgs {
                softnet_allow: strings(&["10.0.0.0/8"]),
                ..net("bridged:en0")
            },
            "p: softnet_allow: needs network = \"softnet\", not \"bridged:en0\"",
        ),
        (
            "p",
            ProfileArgs {
                softnet_expose: strings(&["2222:22"]),
                ..ProfileArgs::default()
            },
            "p: softnet_expose: needs network = \"softnet\", not \"shared\"",
        ),
        (
            "p",
            ProfileArgs {
                root_disk_sync: Some("never".into()),
                ..ProfileArgs::default()
            },
            "p: root_disk_sync: \"never\" is not one of full, fsync, none",
        ),
        (
            "p",
            ProfileArgs {
                root_disk_caching: Some("ro".into()),
                ..ProfileArgs::default()
            },
            "p: root_disk_caching: \"ro\" is not one of automatic, cached, uncached",
        ),
    ];
    for (name, a, want) in cases {
        let err = one(name, a).unwrap_err();
        assert!(err.starts_with(want), "{name}: {err} (want {want})");
    }
}

#[test]
fn the_default_profile_is_built_in_or_a_named_one() {
    let none = resolve(BTreeMap::new(), None).unwrap();
    assert_eq!(none.default_profile(), (None, VmProfile::default()));
    let args = BTreeMap::from([("lan".to_owned(), net("bridged:en0"))]);
    let named = resolve(args.clone(), Some("lan".into())).unwrap();
    assert_eq!(
        named.default_profile(),
        (
            Some("lan"),
            VmProfile {
                network: Network::Bridged("en0".into()),
                root_disk: RootDiskOpts::default(),
            }
        )
    );
    assert_eq!(
        resolve(args, Some("wan".into())),
        Err(ProfileError::NoSuchDefault("wan".into()))
    );
}
