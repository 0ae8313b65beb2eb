//! Downward API values, shared by `env[].valueFrom` and `downwardAPI` volume items, with
//! kubelet's semantics.
//!
//! `fieldRef` ([`field_value`]): `metadata.name`, `metadata.namespace`, `metadata.uid`,
//! `metadata.labels['k']` and `metadata.annotations['k']` (an absent key gives the empty
//! string), `metadata.labels` and `metadata.annotations` (the whole map as `k="v"` lines sorted
//! by key, values quoted as Go's `%q`, no final newline), `spec.nodeName` (and its old alias
//! `spec.host`), `spec.serviceAccountName`, `status.hostIP`/`status.hostIPs` (the Mac's
//! address), `status.podIP`/`status.podIPs` (the VM's one address; empty before the VM has
//! booted, see [`needs_pod_ip`]). Which paths an env var or a volume item may name is the API
//! server's validation; this module answers every path either may name.
//!
//! `resourceFieldRef` ([`resource_value`]): `limits.*` and `requests.*` of `cpu`, `memory` and
//! `ephemeral-storage`, divided by `divisor` (absent or zero: `1`) and rounded up. A limit not
//! set (or zero) reads the node's allocatable amount (kubelet's `MergeContainerResourceLimits`);
//! a request not set reads the container's own limit, as the API server's defaulting would have
//! set it, else 0. CPU is counted in millicores before dividing (`divisor: 1m` gives
//! millicores), memory and storage in bytes. The division is exact integer arithmetic where
//! kubelet divides `float64`s; both agree for amounts below 2^53.
//!
//! Pure. Errors are [`ConfigError::InvalidReference`] with kubelet's words, never a value.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::core::v1::{Container, ObjectFieldSelector, Pod},
    apimachinery::pkg::api::resource::Quantity,
};

use super::model::{ConfigError, DownwardContext};
use crate::quantity::parse_scaled;

/// A `fieldRef` path the agent can answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Field<'a> {
    /// `metadata.name`.
    Name,
    /// `metadata.namespace`.
    Namespace,
    /// `metadata.uid`.
    Uid,
    /// `metadata.labels`: the whole map.
    Labels,
    /// `metadata.annotations`: the whole map.
    Annotations,
    /// `metadata.labels['k']`.
    Label(&'a str),
    /// `metadata.annotations['k']`.
    Annotation(&'a str),
    /// `spec.nodeName` (or `spec.host`).
    NodeName,
    /// `spec.serviceAccountName`.
    ServiceAccountName,
    /// `status.hostIP` or `status.hostIPs`.
    HostIp,
    /// `status.podIP` or `status.podIPs`.
    PodIp,
}

impl<'a> Field<'a> {
    /// Parse a `fieldPath` (kubelet's `ConvertDownwardAPIFieldLabel`, then its subscript check).
    pub(crate) fn parse(path: &'a str) -> Result<Self, ConfigError> {
        if let Some((base, key)) = split_subscript(path) {
            let field = match base {
                "metadata.labels" => Self::Label(key),
                "metadata.annotations" => Self::Annotation(key),
                _ => {
                    return Err(invalid(format!(
                        "field label does not support subscript: {path}"
                    )));
                }
            };
            // Annotation keys are checked lowercased, label keys as they are (kubelet's rule).
            let checked = match field {
                Self::Annotation(k) => k.to_ascii_lowercase(),
                _ => key.to_owned(),
            };
            if !is_qualified_name(&checked) {
                return Err(invalid(format!("invalid key subscript in {path}")));
            }
            return Ok(field);
        }
        Ok(match path {
            "metadata.name" => Self::Name,
            "metadata.namespace" => Self::Namespace,
            "metadata.uid" => Self::Uid,
            "metadata.labels" => Self::Labels,
            "metadata.annotations" => Self::Annotations,
            "spec.nodeName" | "spec.host" => Self::NodeName,
            "spec.serviceAccountName" => Self::ServiceAccountName,
            "status.hostIP" | "status.hostIPs" => Self::HostIp,
            "status.podIP" | "status.podIPs" => Self::PodIp,
            // Accepted by kubelet's label conversion but not by its extraction.
            "spec.restartPolicy" | "spec.schedulerName" | "status.phase" => {
                return Err(invalid(format!("unsupported fieldPath: {path}")));
            }
            _ => return Err(invalid(format!("field label not supported: {path}"))),
        })
    }
}

/// The value of `fieldRef.fieldPath` for `pod`.
pub(crate) fn field_value(
    pod: &Pod,
    ctx: &DownwardContext,
    field_path: &str,
) -> Result<String, ConfigError> {
    let meta = &pod.metadata;
    let spec = pod.spec.as_ref();
    let empty = BTreeMap::new();
    let labels = meta.labels.as_ref().unwrap_or(&empty);
    let annotations = meta.annotations.as_ref().unwrap_or(&empty);
    Ok(match Field::parse(field_path)? {
        Field::Name => meta.name.clone().unwrap_or_default(),
        Field::Namespace => meta.namespace.clone().unwrap_or_default(),
        Field::Uid => meta.uid.clone().unwrap_or_default(),
        Field::Labels => format_map(labels),
        Field::Annotations => format_map(annotations),
        Field::Label(k) => labels.get(k).cloned().unwrap_or_default(),
        Field::Annotation(k) => annotations.get(k).cloned().unwrap_or_default(),
        Field::NodeName => spec
            .and_then(|s| s.node_name.clone())
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| ctx.node_name.clone()),
        Field::ServiceAccountName => spec
            .and_then(|s| s.service_account_name.clone())
            .unwrap_or_default(),
        Field::HostIp => ctx.host_ip.clone(),
        Field::PodIp => ctx.pod_ip.clone().unwrap_or_default(),
    })
}

/// The value of a `fieldRef` selector: [`field_value`] after the `apiVersion` check (only `v1`,
/// the default, exists).
pub(crate) fn field_ref_value(
    pod: &Pod,
    ctx: &DownwardContext,
    selector: &ObjectFieldSelector,
) -> Result<String, ConfigError> {
    match selector.api_version.as_deref() {
        None | Some("" | "v1") => field_value(pod, ctx, &selector.field_path),
        Some(other) => Err(invalid(format!("unsupported pod version: {other}"))),
    }
}

/// Whether the container's env reads the Pod IP, which is unknown (empty) until the VM has
/// booted.
pub(crate) fn needs_pod_ip(container: &Container) -> bool {
    container.env.iter().flatten().any(|e| {
        e.value_from
            .as_ref()
            .and_then(|v| v.field_ref.as_ref())
            .is_some_and(|f| Field::parse(&f.field_path) == Ok(Field::PodIp))
    })
}

/// A resource `resourceFieldRef` can read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Resource {
    Cpu,
    Memory,
    EphemeralStorage,
}

impl Resource {
    fn as_str(self) -> &'static str {
        match self {
            Self::Cpu => "cpu",
            Self::Memory => "memory",
            Self::EphemeralStorage => "ephemeral-storage",
        }
    }

    /// The unit amounts are counted in: millicores for cpu, bytes otherwise.
    fn scale(self) -> u128 {
        match self {
            Self::Cpu => 1000,
            Self::Memory | Self::EphemeralStorage => 1,
        }
    }

    fn node_allocatable(self, ctx: &DownwardContext) -> u128 {
        u128::from(match self {
            Self::Cpu => ctx.node_cpu_millis,
            Self::Memory => ctx.node_memory_bytes,
            Self::EphemeralStorage => ctx.node_ephemeral_bytes,
        })
    }
}

/// The value of `resourceFieldRef` `resource` (e.g. `limits.memory`) for `container`.
pub(crate) fn resource_value(
    container: &Container,
    ctx: &DownwardContext,
    resource: &str,
    divisor: Option<&Quantity>,
) -> Result<String, ConfigError> {
    let unsupported = || invalid(format!("unsupported container resource : {resource}"));
    let (bound, name) = resource.split_once('.').ok_or_else(unsupported)?;
    let res = match name {
        "cpu" => Resource::Cpu,
        "memory" => Resource::Memory,
        "ephemeral-storage" => Resource::EphemeralStorage,
        _ => return Err(unsupported()),
    };
    let divisor = match divisor {
        None => 0,
        Some(q) => parse_scaled(&q.0, res.scale())
            .ok_or_else(|| invalid(format!("invalid divisor for {resource}")))?,
    };
    let divisor = if divisor == 0 { res.scale() } else { divisor };

    let reqs = container.resources.as_ref();
    let amount = |limits: bool| -> Result<Option<u128>, ConfigError> {
        let list = match reqs {
            Some(r) if limits => r.limits.as_ref(),
            Some(r) => r.requests.as_ref(),
            None => None,
        };
        list.and_then(|l| l.get(res.as_str()))
            .map(|q| {
                parse_scaled(&q.0, res.scale())
                    .ok_or_else(|| invalid(format!("invalid quantity for {resource}")))
            })
            .transpose()
    };
    let value = match bound {
        "limits" => match amount(true)? {
            Some(v) if v > 0 => v,
            _ => res.node_allocatable(ctx),
        },
        "requests" => match amount(false)? {
            Some(v) => v,
            None => amount(true)?.unwrap_or(0),
        },
        _ => return Err(unsupported()),
    };
    Ok(value.div_ceil(divisor).to_string())
}

fn invalid(message: String) -> ConfigError {
    ConfigError::InvalidReference(message)
}

/// `base['key']` -> `(base, key)` (kubelet's `SplitMaybeSubscriptedPath`).
fn split_subscript(path: &str) -> Option<(&str, &str)> {
    let inner = path.strip_suffix("']")?;
    let (base, key) = inner.split_once("['")?;
    (!base.is_empty()).then_some((base, key))
}

/// Kubelet's `FormatMap`: `k="v"` lines sorted by key, without a final newline.
pub(crate) fn format_map(map: &BTreeMap<String, String>) -> String {
    let lines: Vec<String> = map
        .iter()
        .map(|(k, v)| format!("{k}={}", go_quote(v)))
        .collect();
    lines.join("\n")
}

/// Go's `strconv.Quote` (the `%q` verb) of a valid UTF-8 string.
fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if c < ' ' || c == '\u{7f}' => out.push_str(&format!("\\x{:02x}", u32::from(c))),
            c if c.is_ascii() || is_printable(c) => out.push(c),
            c if u32::from(c) < 0x10000 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push_str(&format!("\\U{:08x}", u32::from(c))),
        }
    }
    out.push('"');
    out
}

/// Go's `unicode.IsPrint` for a non-ASCII character: not a control, format, surrogate,
/// private-use, unassigned or separator character. Rust's `escape_debug` escapes exactly those
/// categories (plus grapheme extenders, but only at the start of a string, hence the leading
/// `a`).
fn is_printable(c: char) -> bool {
    let probe = format!("a{c}");
    probe.escape_debug().to_string() == probe
}

/// Kubernetes' `IsQualifiedName`: `[prefix/]name`, the prefix a DNS-1123 subdomain, the name at
/// most 63 alphanumerics with `-`, `_`, `.` inside.
fn is_qualified_name(s: &str) -> bool {
    let name = match s.split_once('/') {
        None => s,
        Some((prefix, name)) => {
            if !is_dns_subdomain(prefix) {
                return false;
            }
            name
        }
    };
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// DNS-1123 subdomain: at most 253 characters, dot-separated labels of lowercase
/// alphanumerics and `-`, each starting and ending alphanumeric.
fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253
        && s.split('.').all(|label| {
            let b = label.as_bytes();
            !b.is_empty()
                && is_lower_alnum(b[0])
                && is_lower_alnum(b[b.len() - 1])
                && b.iter().all(|c| is_lower_alnum(*c) || *c == b'-')
        })
}

fn is_lower_alnum(c: u8) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

#[cfg(test)]
mod tests;
