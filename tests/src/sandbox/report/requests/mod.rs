//! The report's API accounting: every request of the agents, from the API server's audit log,
//! by verb, resource and subresource, each row named after what it is for — for an idle Node
//! and for each measured Pod lifecycle (docs/sandbox.md, "API accounting"). Parsing and
//! grouping are pure; [`super::super::accounting`] runs the Pods and picks the windows.

use std::collections::BTreeMap;

use serde::Serialize;

/// One completed request from the audit log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditRequest {
    pub user: String,
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, ...
    pub verb: String,
    /// Empty for a non-resource URL.
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
    /// `requestReceivedTimestamp` (RFC 3339 UTC, microseconds: compares chronologically).
    pub received: String,
}

impl AuditRequest {
    /// A long-running watch (it completes when it times out or is closed).
    pub fn is_watch(&self) -> bool {
        self.verb == "watch"
    }

    /// Received in `[from, to)` (RFC 3339 strings of the audit log's precision).
    pub fn within(&self, from: &str, to: &str) -> bool {
        self.received.as_str() >= from && self.received.as_str() < to
    }
}

/// The completed requests (`ResponseComplete`) in audit-log text; other lines are skipped.
pub fn parse(log: &str) -> Vec<AuditRequest> {
    log.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["stage"] == "ResponseComplete")
        .map(|v| {
            let s = |x: &serde_json::Value| x.as_str().unwrap_or_default().to_owned();
            let o = &v["objectRef"];
            AuditRequest {
                user: s(&v["user"]["username"]),
                verb: s(&v["verb"]),
                resource: s(&o["resource"]),
                subresource: s(&o["subresource"]),
                namespace: s(&o["namespace"]),
                name: s(&o["name"]),
                received: s(&v["requestReceivedTimestamp"]),
            }
        })
        .collect()
}

/// What a request is for. Closed: a request the agent should not make shows as `Other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Purpose {
    /// `update leases` in `kube-node-lease`: the Node's heartbeat.
    LeaseRenewal,
    /// `get`/`create` of the Node's own Lease: its first write, or a read after a conflict.
    LeaseRead,
    /// `list leases`: counting the fleet's image-pull tokens.
    PullTokens,
    /// `patch nodes/status`.
    NodeStatus,
    /// `get`/`create`/`patch nodes`: registration and labels.
    NodeRegistration,
    /// `list`/`watch nodes`: the watch of the agent's own Node.
    NodeWatch,
    /// `list`/`watch pods`: the watch of the Pods bound to the Node.
    PodWatch,
    /// `patch pods`: the agent's finalizer added or removed.
    PodFinalizer,
    /// `patch pods/status`.
    PodStatus,
    /// `delete pods`: the Pod's final delete (grace 0, UID precondition).
    PodDelete,
    /// `create`/`patch events`: a new Event, or a repeat counted on an existing one.
    Event,
    /// `get secrets`: a Secret the Pod names (env or volume).
    Secret,
    /// `get configmaps kube-root-ca.crt`: the cluster CA of a projected token volume.
    RootCa,
    /// `get configmaps` another one the Pod names.
    ConfigMap,
    /// `get`/`list`/`watch configmaps tart-kubelet-prepull`: the pre-pull declaration.
    PrepullDeclaration,
    /// `create serviceaccounts/token`: a projected service-account token (TokenRequest).
    Token,
    /// TokenReviews and SubjectAccessReviews: callers of the kubelet API.
    KubeletApiAuth,
    /// The kubelet serving certificate's request.
    ServingCertificate,
    /// Anything else.
    Other,
}

impl Purpose {
    /// The request's purpose, from its verb and object.
    pub fn of(r: &AuditRequest) -> Self {
        let v = r.verb.as_str();
        match (r.resource.as_str(), r.subresource.as_str()) {
            ("leases", _) if v == "list" => Self::PullTokens,
            ("leases", _) if v == "update" => Self::LeaseRenewal,
            ("leases", _) => Self::LeaseRead,
            ("nodes", "status") => Self::NodeStatus,
            ("nodes", _) if matches!(v, "list" | "watch") => Self::NodeWatch,
            ("nodes", _) => Self::NodeRegistration,
            ("pods", "status") => Self::PodStatus,
            ("pods", "") if matches!(v, "list" | "watch") => Self::PodWatch,
            ("pods", "") if v == "patch" => Self::PodFinalizer,
            ("pods", "") if v == "delete" => Self::PodDelete,
            ("events", _) => Self::Event,
            ("secrets", _) => Self::Secret,
            ("configmaps", _) if r.name == "kube-root-ca.crt" => Self::RootCa,
            ("configmaps", _) if r.name == PREPULL_NAME || r.namespace == PREPULL_NAMESPACE => {
                Self::PrepullDeclaration
            }
            ("configmaps", _) => Self::ConfigMap,
            ("serviceaccounts", "token") => Self::Token,
            ("tokenreviews" | "subjectaccessreviews", _) => Self::KubeletApiAuth,
            ("certificatesigningrequests", _) => Self::ServingCertificate,
            _ => Self::Other,
        }
    }

    /// What the row is for, in words.
    pub fn describe(self) -> &'static str {
        match self {
            Self::LeaseRenewal => "Lease renewal (the Node's heartbeat)",
            Self::LeaseRead => "the Node's Lease read or created",
            Self::PullTokens => "image-pull tokens counted on the Node Leases",
            Self::NodeStatus => "Node status written",
            Self::NodeRegistration => "Node registration or labels",
            Self::NodeWatch => "watch of the Node",
            Self::PodWatch => "watch of the Node's Pods",
            Self::PodFinalizer => "the agent's finalizer added or removed",
            Self::PodStatus => "Pod status written",
            Self::PodDelete => "final delete of the Pod",
            Self::Event => "Event recorded",
            Self::Secret => "Secret read",
            Self::RootCa => "cluster CA (kube-root-ca.crt) for the token volume",
            Self::ConfigMap => "ConfigMap read",
            Self::PrepullDeclaration => "pre-pull declaration read",
            Self::Token => "service-account token requested",
            Self::KubeletApiAuth => "kubelet API caller authenticated or authorized",
            Self::ServingCertificate => "kubelet serving certificate requested",
            Self::Other => "other",
        }
    }
}

/// The pre-pull declaration's default namespace and name (`--prepull-config`).
const PREPULL_NAMESPACE: &str = "tart-kubelet";
const PREPULL_NAME: &str = "tart-kubelet-prepull";

/// One row: requests of one verb on one resource (and subresource) for one purpose.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    pub verb: String,
    pub resource: String,
    /// Empty when none.
    pub subresource: String,
    pub purpose: Purpose,
    /// [`Purpose::describe`].
    pub what: &'static str,
    pub count: u64,
}

/// Requests grouped into rows, most frequent first.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Breakdown {
    /// Requests in all (watches included).
    pub requests: u64,
    /// Of those, long-running watches (counted once each, when they end).
    pub watches: u64,
    pub rows: Vec<Row>,
}

impl Breakdown {
    /// Groups `requests`.
    pub fn of<'a>(requests: impl IntoIterator<Item = &'a AuditRequest>) -> Self {
        let mut by: BTreeMap<(Purpose, String, String, String), u64> = BTreeMap::new();
        let mut b = Self::default();
        for r in requests {
            b.requests += 1;
            b.watches += u64::from(r.is_watch());
            *by.entry((
                Purpose::of(r),
                r.verb.clone(),
                r.resource.clone(),
                r.subresource.clone(),
            ))
            .or_default() += 1;
        }
        b.rows = by
            .into_iter()
            .map(|((purpose, verb, resource, subresource), count)| Row {
                verb,
                resource,
                subresource,
                purpose,
                what: purpose.describe(),
                count,
            })
            .collect();
        b.rows
            .sort_by(|a, b| b.count.cmp(&a.count).then(a.purpose.cmp(&b.purpose)));
        b
    }
}

/// The idle Node's requests over a window.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Idle {
    /// Length of the window.
    pub minutes: f64,
    /// Requests per minute, watches excluded (kubelet's idle figure counts none: a watch is
    /// one long request, re-opened when it times out).
    pub per_minute_without_watches: f64,
    pub breakdown: Breakdown,
}

/// One measured Pod lifecycle: from its creation until it was gone from the API, plus the
/// settle time after.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Lifecycle {
    /// `plain` or `runner`.
    pub pod: String,
    /// What the Pod has (command, Secret, token volume).
    pub shape: String,
    /// Seconds from creation until it was gone.
    pub seconds: f64,
    /// The requests in the Pod's own namespace (the Pod, its status, events, Secrets,
    /// ConfigMaps and token), plus the Node status writes of the window; Lease renewals and
    /// the shared watches are the idle Node's.
    pub breakdown: Breakdown,
}

/// The section (`api_accounting` in the JSON; scenario `api` only).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ApiAccounting {
    pub idle: Idle,
    pub lifecycles: Vec<Lifecycle>,
}

/// The idle window's figures from `requests` of `user` received in `[from, to)`.
pub fn idle(requests: &[AuditRequest], user: &str, from: &str, to: &str, minutes: f64) -> Idle {
    let of_window: Vec<&AuditRequest> = requests
        .iter()
        .filter(|r| r.user == user && r.within(from, to))
        .collect();
    let breakdown = Breakdown::of(of_window.iter().copied());
    let counted = breakdown.requests - breakdown.watches;
    Idle {
        minutes,
        per_minute_without_watches: if minutes > 0.0 {
            counted as f64 / minutes
        } else {
            0.0
        },
        breakdown,
    }
}

/// One lifecycle's requests: `user`'s in `namespace` (any time: the namespace is the Pod's
/// alone), and its Node status writes received in `[from, to)`.
pub fn lifecycle(
    requests: &[AuditRequest],
    user: &str,
    namespace: &str,
    from: &str,
    to: &str,
) -> Breakdown {
    Breakdown::of(requests.iter().filter(|r| {
        r.user == user
            && (r.namespace == namespace
                || (Purpose::of(r) == Purpose::NodeStatus && r.within(from, to)))
    }))
}

/// The section as text.
pub fn render(o: &mut String, a: &ApiAccounting) {
    use std::fmt::Write as _;
    let _ = writeln!(
        o,
        "API requests, idle: {:.2}/min without watches over {:.1} min ({} watches ended)",
        a.idle.per_minute_without_watches, a.idle.minutes, a.idle.breakdown.watches
    );
    rows(o, &a.idle.breakdown);
    for l in &a.lifecycles {
        let _ = writeln!(
            o,
            "API requests, one {} Pod ({}): {} in {:.1} s",
            l.pod, l.shape, l.breakdown.requests, l.seconds
        );
        rows(o, &l.breakdown);
    }
}

fn rows(o: &mut String, b: &Breakdown) {
    use std::fmt::Write as _;
    for r in &b.rows {
        let res = if r.subresource.is_empty() {
            r.resource.clone()
        } else {
            format!("{}/{}", r.resource, r.subresource)
        };
        let _ = writeln!(o, "  {:>5}  {:<7} {:<28} {}", r.count, r.verb, res, r.what);
    }
}

#[cfg(test)]
mod tests;
