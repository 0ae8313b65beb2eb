//! PURE: the Node's metadata and spec — labels, taint, providerID — and the merge patch that
//! brings an existing Node's labels up to date.
//!
//! Labels we set: `kubernetes.io/{os,arch,hostname}` (kubelet's allow-list), `type=virtual-kubelet`
//! (virtual-kubelet convention), discovered facts under [`LABEL_PREFIX`], and the operator's.
//! Only labels under [`LABEL_PREFIX`] that we no longer want are removed; labels anyone else set
//! are left alone. The taint is only set when the Node is created: NodeRestriction forbids
//! changing taints later, and an operator may have edited them on purpose.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, NodeSpec, Taint};
use kube::api::ObjectMeta;
use serde_json::{Map, Value, json};

use crate::{
    config::{Config, LABEL_PREFIX},
    host::HostFacts,
};

/// The providerID of `node`.
pub fn provider_id(node: &str) -> String {
    format!("tart://{node}")
}

/// Make `s` a valid label value: invalid characters become `-`, at most 63 characters,
/// alphanumeric at both ends (`Mac14,3` -> `Mac14-3`, `Apple M2 Pro` -> `Apple-M2-Pro`).
pub fn label_value(s: &str) -> String {
    let mapped: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .take(63)
        .collect();
    mapped
        .trim_matches(|c: char| !c.is_ascii_alphanumeric())
        .to_owned()
}

/// Every label this agent wants on its Node.
pub fn desired_labels(
    cfg: &Config,
    facts: &HostFacts,
    tart_version: Option<&str>,
) -> BTreeMap<String, String> {
    let mut l = BTreeMap::new();
    l.insert("kubernetes.io/os".into(), "darwin".into());
    l.insert("kubernetes.io/arch".into(), "arm64".into());
    l.insert("kubernetes.io/hostname".into(), cfg.node_name.clone());
    l.insert("type".into(), "virtual-kubelet".into());
    let os_version = facts.os_image.rsplit(' ').next().unwrap_or(&facts.os_image);
    for (k, v) in [
        ("macos-version", os_version),
        ("model", facts.model.as_str()),
        ("chip", facts.chip.as_str()),
        ("tart-version", tart_version.unwrap_or("")),
    ] {
        let v = label_value(v);
        if !v.is_empty() {
            l.insert(format!("{LABEL_PREFIX}{k}"), v);
        }
    }
    for (k, v) in &cfg.node_labels {
        l.insert(k.clone(), v.clone());
    }
    l
}

/// The Node to create when none exists.
pub fn new_node(cfg: &Config, labels: BTreeMap<String, String>) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some(cfg.node_name.clone()),
            labels: Some(labels),
            ..ObjectMeta::default()
        },
        spec: Some(NodeSpec {
            provider_id: Some(provider_id(&cfg.node_name)),
            taints: cfg.taint.as_ref().map(|t| {
                vec![Taint {
                    key: t.key.clone(),
                    value: (!t.value.is_empty()).then(|| t.value.clone()),
                    effect: t.effect.clone(),
                    time_added: None,
                }]
            }),
            ..NodeSpec::default()
        }),
        status: None,
    }
}

/// JSON merge patch for an existing Node: set our labels, remove stale labels under our
/// prefix, set providerID if it is empty. `None` when nothing needs to change.
pub fn update_patch(existing: &Node, desired: &BTreeMap<String, String>) -> Option<Value> {
    let current = existing.metadata.labels.clone().unwrap_or_default();
    let mut labels = Map::new();
    for (k, v) in desired {
        if current.get(k) != Some(v) {
            labels.insert(k.clone(), Value::String(v.clone()));
        }
    }
    for k in current.keys() {
        if k.starts_with(LABEL_PREFIX) && !desired.contains_key(k) {
            labels.insert(k.clone(), Value::Null);
        }
    }
    let has_provider = existing
        .spec
        .as_ref()
        .and_then(|s| s.provider_id.as_deref())
        .is_some_and(|p| !p.is_empty());
    let mut patch = Map::new();
    if !labels.is_empty() {
        patch.insert("metadata".into(), json!({ "labels": labels }));
    }
    if !has_provider {
        let name = existing.metadata.name.as_deref().unwrap_or_default();
        patch.insert("spec".into(), json!({ "providerID": provider_id(name) }));
    }
    (!patch.is_empty()).then_some(Value::Object(patch))
}

#[cfg(test)]
mod tests {
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
        let l = desired_labels(&c, &FixedHost::default().facts, Some("2.35.0"));
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
        for v in l.values() {
            crate::config::units::validate_label_value(v).unwrap();
        }
    }

    #[test]
    fn new_node_has_the_taint_and_provider_id() {
        let c = cfg(&[]);
        let n = new_node(&c, BTreeMap::new());
        let spec = n.spec.unwrap();
        assert_eq!(spec.provider_id.as_deref(), Some("tart://mini-1"));
        let t = &spec.taints.unwrap()[0];
        assert_eq!(
            (t.key.as_str(), t.value.as_deref(), t.effect.as_str()),
            ("virtual-kubelet.io/provider", Some("tart"), "NoSchedule")
        );
        assert!(
            new_node(&cfg(&["--taint", "none"]), BTreeMap::new())
                .spec
                .unwrap()
                .taints
                .is_none()
        );
    }

    #[test]
    fn update_prunes_only_our_prefix_and_never_touches_taints() {
        let mut existing = new_node(&cfg(&[]), BTreeMap::new());
        existing.metadata.labels = Some(BTreeMap::from([
            ("tart.run/stale".to_string(), "x".to_string()),
            ("someone.else/keep".to_string(), "y".to_string()),
            ("type".to_string(), "virtual-kubelet".to_string()),
        ]));
        let desired = BTreeMap::from([
            ("type".to_string(), "virtual-kubelet".to_string()),
            ("tart.run/chip".to_string(), "Apple-M2".to_string()),
        ]);
        let p = update_patch(&existing, &desired).unwrap();
        assert_eq!(
            p,
            json!({"metadata": {"labels": {"tart.run/stale": null, "tart.run/chip": "Apple-M2"}}})
        );
        existing.metadata.labels = Some(desired.clone());
        assert_eq!(update_patch(&existing, &desired), None, "nothing to change");
        existing.spec.as_mut().unwrap().provider_id = None;
        assert_eq!(
            update_patch(&existing, &desired),
            Some(json!({"spec": {"providerID": "tart://mini-1"}}))
        );
    }

    #[test]
    fn label_values_are_sanitised() {
        assert_eq!(label_value("Apple M2 Pro"), "Apple-M2-Pro");
        assert_eq!(label_value("(weird)"), "weird");
        assert_eq!(label_value(&"a".repeat(80)).len(), 63);
    }
}
