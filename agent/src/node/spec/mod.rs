//! PURE: the Node's metadata and spec — labels, taint, providerID — and the merge patch that
//! brings an existing Node's labels up to date.
//!
//! Labels we set: `kubernetes.io/{os,arch,hostname}` (kubelet's allow-list), `type=virtual-kubelet`
//! (virtual-kubelet convention), discovered facts under [`LABEL_PREFIX`],
//! `node.kubernetes.io/instance-type` (the Mac's model), one [`HANDLER_LABEL_PREFIX`] label per VM
//! profile (RuntimeClass handler) this Mac serves, and the operator's.
//! Only labels under [`LABEL_PREFIX`] or [`HANDLER_LABEL_PREFIX`] that we no longer want are
//! removed; labels anyone else set are left alone. The taint is only set when the Node is created: NodeRestriction forbids
//! changing taints later, and an operator may have edited them on purpose.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, NodeSpec, Taint};
use kube::api::ObjectMeta;
use serde_json::{Map, Value, json};

use crate::{
    config::{Config, LABEL_PREFIX},
    host::HostFacts,
};

/// The well-known instance type label, the Mac's model by default (an operator's
/// `--node-label` with this key takes its place).
pub(crate) const INSTANCE_TYPE: &str = "node.kubernetes.io/instance-type";

/// `<prefix><handler>=true` says this Mac serves the RuntimeClass handler: a RuntimeClass's
/// `scheduling.nodeSelector` selects on it (docs/node.md, "Labels"). A prefix of its own since
/// a handler may be 63 characters, the whole name part of a label key.
pub(crate) const HANDLER_LABEL_PREFIX: &str = "runtime-handler.tart.run/";

/// Annotation naming the VM profiles this Mac cannot run now and why: a JSON object, handler →
/// reason (docs/node.md, "VM profiles this Mac cannot run"); absent when every profile runs.
pub(crate) const UNAVAILABLE_PROFILES_ANNOTATION: &str = "tart.run/unavailable-vm-profiles";

/// The value of [`UNAVAILABLE_PROFILES_ANNOTATION`] for `unavailable` (handler → why), `None`
/// when there is none.
pub(crate) fn unavailable_annotation(unavailable: &BTreeMap<String, String>) -> Option<String> {
    (!unavailable.is_empty()).then(|| json!(unavailable).to_string())
}

/// The providerID of `node`.
pub(crate) fn provider_id(node: &str) -> String {
    format!("tart://{node}")
}

/// Make `s` a valid label value: invalid characters become `-`, at most 63 characters,
/// alphanumeric at both ends (`Mac14,3` -> `Mac14-3`, `Apple M2 Pro` -> `Apple-M2-Pro`).
pub(crate) fn label_value(s: &str) -> String {
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

/// Every label this agent wants on its Node; a profile in `unavailable` has no handler label.
pub(crate) fn desired_labels(
    cfg: &Config,
    facts: &HostFacts,
    tart_version: Option<&str>,
    unavailable: &BTreeMap<String, String>,
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
    let model = label_value(&facts.model);
    if !model.is_empty() {
        l.insert(INSTANCE_TYPE.into(), model);
    }
    for (handler, _) in cfg.vm_profiles.handlers() {
        if unavailable.contains_key(handler) {
            continue;
        }
        l.insert(format!("{HANDLER_LABEL_PREFIX}{handler}"), "true".into());
    }
    for (k, v) in &cfg.node_labels {
        l.insert(k.clone(), v.clone());
    }
    l
}

/// The Node to create when none exists.
pub(crate) fn new_node(
    cfg: &Config,
    labels: BTreeMap<String, String>,
    unavailable: Option<String>,
) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some(cfg.node_name.clone()),
            labels: Some(labels),
            annotations: unavailable
                .map(|v| BTreeMap::from([(UNAVAILABLE_PROFILES_ANNOTATION.to_owned(), v)])),
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
/// prefix, set or remove [`UNAVAILABLE_PROFILES_ANNOTATION`], set providerID if it is empty.
/// `None` when nothing needs to change.
pub(crate) fn update_patch(
    existing: &Node,
    desired: &BTreeMap<String, String>,
    unavailable: Option<&str>,
) -> Option<Value> {
    let current = existing.metadata.labels.clone().unwrap_or_default();
    let mut labels = Map::new();
    for (k, v) in desired {
        if current.get(k) != Some(v) {
            labels.insert(k.clone(), Value::String(v.clone()));
        }
    }
    for k in current.keys() {
        let ours = k.starts_with(LABEL_PREFIX) || k.starts_with(HANDLER_LABEL_PREFIX);
        if ours && !desired.contains_key(k) {
            labels.insert(k.clone(), Value::Null);
        }
    }
    let has_provider = existing
        .spec
        .as_ref()
        .and_then(|s| s.provider_id.as_deref())
        .is_some_and(|p| !p.is_empty());
    let mut metadata = Map::new();
    if !labels.is_empty() {
        metadata.insert("labels".into(), Value::Object(labels));
    }
    let annotated = existing
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(UNAVAILABLE_PROFILES_ANNOTATION))
        .map(String::as_str);
    if annotated != unavailable {
        let value = unavailable.map_or(Value::Null, |v| Value::String(v.to_owned()));
        metadata.insert(
            "annotations".into(),
            json!({ UNAVAILABLE_PROFILES_ANNOTATION: value }),
        );
    }
    let mut patch = Map::new();
    if !metadata.is_empty() {
        patch.insert("metadata".into(), Value::Object(metadata));
    }
    if !has_provider {
        let name = existing.metadata.name.as_deref().unwrap_or_default();
        patch.insert("spec".into(), json!({ "providerID": provider_id(name) }));
    }
    (!patch.is_empty()).then_some(Value::Object(patch))
}

#[cfg(test)]
mod tests;
