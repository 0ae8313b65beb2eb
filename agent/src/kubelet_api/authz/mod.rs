//! PURE: what a kubelet API request asks permission for — kubelet's mapping of the HTTP method
//! to a verb and of the path to a `nodes/<subresource>` — and the texts of its refusals.
//!
//! One deliberate deviation from kubelet: the streaming paths (`/exec`, `/attach`,
//! `/portForward`, `/run`) always need `create`, whatever the method, so that `get nodes/proxy`
//! (held by many monitoring roles) cannot open a WebSocket exec. The API server's kubelet
//! client identity holds `create`, so nothing legitimate is refused.

use hyper::Method;

/// The SubjectAccessReview verb.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Verb {
    /// GET.
    Get,
    /// POST.
    Create,
    /// PUT.
    Update,
    /// PATCH.
    Patch,
    /// DELETE.
    Delete,
    /// Any other method (HEAD, OPTIONS, ...): kubelet sends an empty verb, which only a `*`
    /// rule (or `system:masters`) allows.
    None,
}

impl Verb {
    /// The verb as RBAC spells it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Get => "get",
            Self::Create => "create",
            Self::Update => "update",
            Self::Patch => "patch",
            Self::Delete => "delete",
            Self::None => "",
        }
    }
}

/// The `nodes` subresource a path falls under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Subresource {
    /// `/stats`.
    Stats,
    /// `/metrics` and everything under it.
    Metrics,
    /// `/logs` (node log files, not container logs).
    Log,
    /// `/spec`.
    Spec,
    /// `/checkpoint`.
    Checkpoint,
    /// Everything else.
    Proxy,
}

impl Subresource {
    /// The subresource as RBAC spells it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Stats => "stats",
            Self::Metrics => "metrics",
            Self::Log => "log",
            Self::Spec => "spec",
            Self::Checkpoint => "checkpoint",
            Self::Proxy => "proxy",
        }
    }
}

/// `path` is `prefix` or lies under it (kubelet's `isSubpath`: `/statsfoo` is not `/stats`).
fn is_subpath(path: &str, prefix: &str) -> bool {
    path.strip_prefix(prefix)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// Paths that open a stream into the workload: `create` is always required.
const STREAMING: [&str; 4] = ["/exec", "/attach", "/portForward", "/run"];

/// The verb kubelet derives from the method.
pub(super) fn verb_for(method: &Method) -> Verb {
    match *method {
        Method::GET => Verb::Get,
        Method::POST => Verb::Create,
        Method::PUT => Verb::Update,
        Method::PATCH => Verb::Patch,
        Method::DELETE => Verb::Delete,
        _ => Verb::None,
    }
}

/// The subresource kubelet derives from the path.
pub(super) fn subresource_for(path: &str) -> Subresource {
    [
        ("/stats", Subresource::Stats),
        ("/metrics", Subresource::Metrics),
        ("/logs", Subresource::Log),
        ("/spec", Subresource::Spec),
        ("/checkpoint", Subresource::Checkpoint),
    ]
    .into_iter()
    .find(|(prefix, _)| is_subpath(path, prefix))
    .map_or(Subresource::Proxy, |(_, s)| s)
}

/// What a request must be allowed: verb and subresource on this Node.
pub(super) fn required(method: &Method, path: &str) -> (Verb, Subresource) {
    let sub = subresource_for(path);
    if STREAMING.iter().any(|p| is_subpath(path, p)) {
        return (Verb::Create, sub);
    }
    (verb_for(method), sub)
}

/// The 403 body, in kubelet's words.
pub(super) fn forbidden_message(user: &str, verb: Verb, sub: Subresource) -> String {
    format!(
        "Forbidden (user={user}, verb={}, resource=nodes, subresource={})",
        verb.as_str(),
        sub.as_str()
    )
}

/// The 500 body when the review itself failed, in kubelet's words.
pub(super) fn review_failed_message(user: &str, verb: Verb, sub: Subresource) -> String {
    format!(
        "Authorization error (user={user}, verb={}, resource=nodes, subresource={})",
        verb.as_str(),
        sub.as_str()
    )
}

#[cfg(test)]
mod tests;
