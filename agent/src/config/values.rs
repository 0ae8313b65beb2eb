//! The typed values of the agent's options (`RunArgs`) that need more than a plain clap or serde type: each
//! has one parser, used by clap for flags and environment variables and by serde for the TOML
//! file, so a value means the same and fails with the same message wherever it is written.
//!
//! Checks that involve one value only live here; checks across settings, and those that need
//! a host-derived default, are the `resolve` module's.

use std::{net::SocketAddr, str::FromStr, time::Duration};

use serde::Deserialize;

use super::units::{self, TaintSpec};

/// An operator's Node label, `key=value`, with a key kubelet's `--node-labels` accepts
/// ([`node_label_refusal`]).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub(crate) struct NodeLabel {
    pub(crate) key: String,
    pub(crate) value: String,
}

impl FromStr for NodeLabel {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let (key, value) = units::parse_label(s)?;
        match node_label_refusal(&key) {
            Some(why) => Err(why),
            None => Ok(Self { key, value }),
        }
    }
}

/// The label keys in the `kubernetes.io` and `k8s.io` namespaces that kubelet's `--node-labels`
/// accepts one by one (kubelet's `IsKubeletLabel`), besides those under [`KUBELET_LABEL_PREFIXES`].
const KUBELET_LABELS: [&str; 11] = [
    "beta.kubernetes.io/arch",
    "beta.kubernetes.io/instance-type",
    "beta.kubernetes.io/os",
    "failure-domain.beta.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
    "kubernetes.io/arch",
    "kubernetes.io/hostname",
    "kubernetes.io/os",
    "node.kubernetes.io/instance-type",
    "topology.kubernetes.io/region",
    "topology.kubernetes.io/zone",
];

/// The namespaces whose every key kubelet's `--node-labels` accepts (and any subdomain of them).
const KUBELET_LABEL_PREFIXES: [&str; 2] = ["kubelet.kubernetes.io", "node.kubernetes.io"];

/// Labels the agent sets from the host, which an operator's label may not override.
const AGENT_LABELS: [&str; 3] = [
    "kubernetes.io/arch",
    "kubernetes.io/hostname",
    "kubernetes.io/os",
];

/// PURE: why kubelet would refuse `key` in `--node-labels`, or `None` when it accepts it.
/// kubelet's rule, which the NodeRestriction admission plugin also applies to a node's labels
/// on its own Node: a key in the `kubernetes.io` or `k8s.io` namespace (or a subdomain of
/// either) must be in [`KUBELET_LABELS`] or under [`KUBELET_LABEL_PREFIXES`]; keys in any other
/// namespace are the operator's. The agent also keeps the host's `kubernetes.io/os`, `arch` and
/// `hostname` to itself.
pub(crate) fn node_label_refusal(key: &str) -> Option<String> {
    if AGENT_LABELS.contains(&key) {
        return Some(format!(
            "node label {key:?} is set by the agent from the host and cannot be overridden"
        ));
    }
    let namespace = key.rsplit_once('/').map_or("", |(p, _)| p);
    let within = |ns: &str, d: &str| ns == d || ns.ends_with(&format!(".{d}"));
    let reserved = ["kubernetes.io", "k8s.io"]
        .iter()
        .any(|d| within(namespace, d));
    let allowed = KUBELET_LABELS.contains(&key)
        || KUBELET_LABEL_PREFIXES.iter().any(|d| within(namespace, d));
    (reserved && !allowed).then(|| {
        format!(
            "node label {key:?} is not allowed: as with kubelet's --node-labels (and the \
             NodeRestriction admission plugin), keys in the kubernetes.io and k8s.io namespaces \
             must begin with an allowed prefix ({}) or be one of {}",
            KUBELET_LABEL_PREFIXES.join(", "),
            KUBELET_LABELS.join(", ")
        )
    })
}

/// The `--taint` setting: a taint, or none at all (`none` or the empty string).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub(crate) struct NodeTaint(pub(crate) Option<TaintSpec>);

impl FromStr for NodeTaint {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "" | "none" => Ok(Self(None)),
            t => units::parse_taint(t).map(|t| Self(Some(t))),
        }
    }
}

/// One `--tart-deadline op=duration`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub(crate) struct TartDeadline {
    pub(crate) op: tart::Op,
    pub(crate) deadline: Duration,
}

impl FromStr for TartDeadline {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let (op, v) = s
            .split_once('=')
            .ok_or_else(|| format!("{s:?} is not op=duration"))?;
        let op = tart::Op::ALL
            .into_iter()
            .find(|o| o.as_str() == op)
            .ok_or_else(|| format!("{op:?} is not a tart op"))?;
        let deadline = units::parse_duration(v)?;
        Ok(Self { op, deadline })
    }
}

/// `try_from = "String"` for the types above: serde hands the TOML string to [`FromStr`].
macro_rules! try_from_string {
    ($($t:ty),*) => {$(
        impl TryFrom<String> for $t {
            type Error = String;
            fn try_from(s: String) -> Result<Self, String> {
                s.parse()
            }
        }
    )*};
}
try_from_string!(NodeLabel, NodeTaint, TartDeadline);

/// `HOST:PORT` with a literal IP address.
pub(crate) fn parse_socket_addr(s: &str) -> Result<SocketAddr, String> {
    s.parse().map_err(|_| format!("{s:?} is not host:port"))
}

/// `X.Y.Z`.
pub(crate) fn parse_version(s: &str) -> Result<(u32, u32, u32), String> {
    units::parse_semver(s).ok_or_else(|| format!("{s:?}: use MAJOR.MINOR.PATCH"))
}

/// Deserializers for `Option` fields read from a TOML string by one of the parsers above or
/// in [`units`]; a missing key is `None` through `#[serde(default)]`.
pub(crate) mod de {
    use std::{net::SocketAddr, time::Duration};

    use serde::{Deserialize, Deserializer, de::Error as _};

    use crate::config::{
        units::{self, DiskThreshold},
        values::{parse_socket_addr, parse_version},
    };

    fn parsed<'de, D, T>(d: D, parse: fn(&str) -> Result<T, String>) -> Result<Option<T>, D::Error>
    where
        D: Deserializer<'de>,
    {
        parse(&String::deserialize(d)?)
            .map(Some)
            .map_err(D::Error::custom)
    }

    pub(crate) fn duration<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        parsed(d, units::parse_duration)
    }

    pub(crate) fn bytes<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        parsed(d, units::parse_bytes)
    }

    pub(crate) fn disk_threshold<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<DiskThreshold>, D::Error> {
        parsed(d, units::parse_disk_threshold)
    }

    pub(crate) fn socket_addr<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<SocketAddr>, D::Error> {
        parsed(d, parse_socket_addr)
    }

    pub(crate) fn version<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<(u32, u32, u32)>, D::Error> {
        parsed(d, parse_version)
    }
}
