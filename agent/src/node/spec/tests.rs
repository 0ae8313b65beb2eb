use clap::Parser;

use super::*;
use crate::{cli::Cli, config::HostDefaults, host::FixedHost};

fn cfg(argv: &[&str]) -> Config {
    let cli = Cli::try_parse_from(std::iter::once("t").chain(argv.iter().copied())).unwrap();
    let host = HostDefaults {
        hostname: "mini-1".into(),
        home: "/h".into(),
    };
    Config::resolve(cli.run, &host).unwrap()
}

#[test]
fn labels_carry_kubelet_keys_facts_and_operator_labels() {
    let c = cfg(&["--node-label", "team=ios,tart.run/pool=a"]);
    let l = desired_labels(
        &c,
        &FixedHost::default().facts,
        Some("2.35.0"),
        &BTreeMap::new(),
    );
    assert_eq!(l["kubernetes.io/os"], "darwin");
    assert_eq!(l["kubernetes.io/arch"], "arm64");
    assert_eq!(l["kubernetes.io/hostname"], "mini-1");
    assert_eq!(l["type"], "virtual-kubelet");
    assert_eq!(l["tart.run/macos-version"], "15.3.1");
    assert_eq!(l["tart.run/model"], "Mac14-3");
    assert_eq!(l["tart.run/chip"], "Apple-M2");
    assert_eq!(l["tart.run/tart-version"], "2.35.0");
    assert_eq!(l["team"], "ios");
    assert_eq!(l["tart.run/pool"], "a");
    assert_eq!(l[INSTANCE_TYPE], "Mac14-3", "the model, by default");
    for v in l.values() {
        crate::config::units::validate_label_value(v).unwrap();
    }
    let c = cfg(&[
        "--node-label",
        "node.kubernetes.io/instance-type=mac-mini-m2,topology.kubernetes.io/zone=rack-3",
    ]);
    let l = desired_labels(&c, &FixedHost::default().facts, None, &BTreeMap::new());
    assert_eq!(l[INSTANCE_TYPE], "mac-mini-m2", "the operator's wins");
    assert_eq!(l["topology.kubernetes.io/zone"], "rack-3");
}

#[test]
fn new_node_has_the_taint_and_provider_id() {
    let c = cfg(&[]);
    let n = new_node(&c, BTreeMap::new(), None);
    let spec = n.spec.unwrap();
    assert_eq!(spec.provider_id.as_deref(), Some("tart://mini-1"));
    let t = &spec.taints.unwrap()[0];
    assert_eq!(
        (t.key.as_str(), t.value.as_deref(), t.effect.as_str()),
        ("virtual-kubelet.io/provider", Some("tart"), "NoSchedule")
    );
    assert!(
        new_node(&cfg(&["--taint", "none"]), BTreeMap::new(), None)
            .spec
            .unwrap()
            .taints
            .is_none()
    );
}

#[test]
fn update_prunes_only_our_prefix_and_never_touches_taints() {
    let mut existing = new_node(&cfg(&[]), BTreeMap::new(), None);
    existing.metadata.labels = Some(BTreeMap::from([
        ("tart.run/stale".to_string(), "x".to_string()),
        ("someone.else/keep".to_string(), "y".to_string()),
        ("type".to_string(), "virtual-kubelet".to_string()),
    ]));
    let desired = BTreeMap::from([
        ("type".to_string(), "virtual-kubelet".to_string()),
        ("tart.run/chip".to_string(), "Apple-M2".to_string()),
    ]);
    let p = update_patch(&existing, &desired, None).unwrap();
    assert_eq!(
        p,
        json!({"metadata": {"labels": {"tart.run/stale": null, "tart.run/chip": "Apple-M2"}}})
    );
    existing.metadata.labels = Some(desired.clone());
    assert_eq!(
        update_patch(&existing, &desired, None),
        None,
        "nothing to change"
    );
    existing.spec.as_mut().unwrap().provider_id = None;
    assert_eq!(
        update_patch(&existing, &desired, None),
        Some(json!({"spec": {"providerID": "tart://mini-1"}}))
    );
}

#[test]
fn label_values_are_sanitised() {
    assert_eq!(label_value("Apple M2 Pro"), "Apple-M2-Pro");
    assert_eq!(label_value("(weird)"), "weird");
    assert_eq!(label_value(&"a".repeat(80)).len(), 63);
}

#[test]
fn each_served_handler_is_a_label_and_a_dropped_one_is_pruned() {
    let c = with_two_profiles();
    let l = desired_labels(&c, &FixedHost::default().facts, None, &BTreeMap::new());
    assert_eq!(l["runtime-handler.tart.run/isolated"], "true");
    assert_eq!(l["runtime-handler.tart.run/lan"], "true");
    for k in l.keys() {
        crate::config::units::validate_label_key(k).unwrap();
    }
    let mut existing = new_node(&c, l.clone(), None);
    existing
        .metadata
        .labels
        .as_mut()
        .unwrap()
        .insert("runtime-handler.tart.run/old".into(), "true".into());
    let p = update_patch(&existing, &l, None).unwrap();
    assert_eq!(
        p,
        json!({"metadata": {"labels": {"runtime-handler.tart.run/old": null}}})
    );
}

#[test]
fn an_unavailable_profile_loses_its_label_and_the_annotation_says_why() {
    let c = with_two_profiles();
    let facts = &FixedHost::default().facts;
    let all = desired_labels(&c, facts, None, &BTreeMap::new());
    let existing = new_node(&c, all, None);
    let unavailable = BTreeMap::from([("isolated".to_owned(), "no softnet".to_owned())]);
    let l = desired_labels(&c, facts, None, &unavailable);
    assert!(!l.contains_key("runtime-handler.tart.run/isolated"));
    assert_eq!(l["runtime-handler.tart.run/lan"], "true");
    let note = unavailable_annotation(&unavailable);
    assert_eq!(note.as_deref(), Some(r#"{"isolated":"no softnet"}"#));
    let p = update_patch(&existing, &l, note.as_deref()).unwrap();
    assert_eq!(
        p,
        json!({"metadata": {
            "labels": {"runtime-handler.tart.run/isolated": null},
            "annotations": {"tart.run/unavailable-vm-profiles": r#"{"isolated":"no softnet"}"#},
        }})
    );
    // Available again: the label returns and the annotation goes.
    let marked = new_node(&c, l, note);
    let all = desired_labels(&c, facts, None, &BTreeMap::new());
    assert_eq!(unavailable_annotation(&BTreeMap::new()), None);
    let p = update_patch(&marked, &all, None).unwrap();
    assert_eq!(
        p,
        json!({"metadata": {
            "labels": {"runtime-handler.tart.run/isolated": "true"},
            "annotations": {"tart.run/unavailable-vm-profiles": null},
        }})
    );
    assert_eq!(
        update_patch(&marked, &marked_labels(&marked), marked_note(&marked)),
        None
    );
}

fn marked_labels(n: &k8s_openapi::api::core::v1::Node) -> BTreeMap<String, String> {
    n.metadata.labels.clone().unwrap_or_default()
}

fn marked_note(n: &k8s_openapi::api::core::v1::Node) -> Option<&str> {
    n.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("tart.run/unavailable-vm-profiles"))
        .map(String::as_str)
}

/// A configuration with the profiles `isolated` and `lan`.
fn with_two_profiles() -> Config {
    let mut c = cfg(&[]);
    let profiles = BTreeMap::from([
        ("isolated".to_owned(), crate::config::VmProfile::default()),
        ("lan".to_owned(), crate::config::VmProfile::default()),
    ]);
    c.vm_profiles = crate::config::VmProfiles::new(profiles, None);
    c
}
