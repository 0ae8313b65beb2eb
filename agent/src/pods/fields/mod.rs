//! Which Pod fields the agent honours, rejects, or accepts without honouring, so that no field
//! is silently ignored: [`ignored_fields`] lists the set fields the agent does not honour (for
//! one Warning event), and [`unsupported_volume`] names the part of a volume that admission
//! must reject. Both walk the tables in [`table`], which `docs/pods.md` shows field by field.
//! Pure; no I/O. Admission and the event are the callers' business.

pub(crate) mod table;

#[cfg(test)]
mod tests;

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{Pod, Volume};
use serde_json::Value;

pub(crate) use table::{Baseline, Field, Treatment};

/// Whether `v` is one of the values of a warned field that warn nothing.
fn holds(b: Baseline, v: &Value) -> bool {
    match b {
        Baseline::Empty => is_empty(v),
        Baseline::One(values) => match v {
            Value::Null => true,
            Value::String(s) => values.contains(&s.as_str()),
            _ => false,
        },
        Baseline::True => matches!(v, Value::Null | Value::Bool(true)),
    }
}

/// The paths of the fields the Pod sets that the agent accepts but does not honour (for
/// example `spec.containers[0].livenessProbe`, `spec.hostNetwork`), sorted, each once. A field
/// left at its API-server default is not listed, so a plain Pod yields nothing.
pub(crate) fn ignored_fields(pod: &Pod) -> Vec<String> {
    let mut found = BTreeSet::new();
    if let Some(spec) = pod.spec.as_ref() {
        let value = serde_json::to_value(spec).unwrap_or(Value::Null);
        walk(&value, table::POD_SPEC, "spec", &mut |finding, path| {
            if finding == Finding::Warned {
                found.insert(path);
            }
        });
    }
    found.into_iter().collect()
}

/// The part of the volume that makes it unsupported: its type (`hostPath`,
/// `persistentVolumeClaim`), or a projected source (`projected.sources[1].clusterTrustBundle`).
/// `None` for a volume the agent can give a VM.
pub(crate) fn unsupported_volume(volume: &Volume) -> Option<String> {
    let value = serde_json::to_value(volume).unwrap_or(Value::Null);
    let has_type = value
        .as_object()
        .is_some_and(|m| m.keys().any(|k| k != "name"));
    if !has_type {
        return Some("no volume type".into());
    }
    let mut first = None;
    walk(&value, table::VOLUME, "", &mut |finding, path| {
        if finding == Finding::Rejected && first.is_none() {
            first = Some(path);
        }
    });
    first
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Finding {
    Warned,
    Rejected,
}

/// Reports each set field that is warned (off its baseline) or rejected, by path.
fn walk(value: &Value, fields: &[Field], path: &str, report: &mut impl FnMut(Finding, String)) {
    let Value::Object(map) = value else { return };
    for (key, v) in map {
        // k8s-openapi serializes only the fields its type has, all of them in the tables.
        let Some(field) = fields.iter().find(|f| f.name == key) else {
            continue;
        };
        let here = if path.is_empty() {
            key.clone()
        } else {
            format!("{path}.{key}")
        };
        match field.treatment {
            Treatment::Warned(baseline) if !holds(baseline, v) => report(Finding::Warned, here),
            // A rejected list counts when it has items; a volume type even when it is `{}`.
            Treatment::Rejected if !is_unset_list(v) => report(Finding::Rejected, here),
            Treatment::Partly(nested) => match v {
                Value::Array(items) => {
                    for (i, item) in items.iter().enumerate() {
                        walk(item, nested, &format!("{here}[{i}]"), report);
                    }
                }
                _ => walk(v, nested, &here, report),
            },
            _ => {}
        }
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null | Value::Bool(false) => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.values().all(is_empty),
        Value::Bool(true) | Value::Number(_) => false,
    }
}

fn is_unset_list(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}
