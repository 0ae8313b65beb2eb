//! The Kubernetes API permissions the agent needs, as data: `doctor` asks the API server about
//! each one with a SelfSubjectAccessReview, and tests/tests/ship_rbac.rs checks that
//! packaging/kubernetes/rbac.yaml grants exactly these (plus doctor's own review) — every one,
//! and nothing more.
use crate::config::{Config, PullCredentials};

/// Namespace of node Leases.
pub const LEASE_NAMESPACE: &str = "kube-node-lease";

/// One verb on one resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Permission {
    /// API group (`""` = core).
    pub group: &'static str,
    /// Resource (plural).
    pub resource: &'static str,
    /// Subresource (`""` = none).
    pub subresource: &'static str,
    /// Verb.
    pub verb: &'static str,
    /// Namespace (`""` = all namespaces / cluster-scoped).
    pub namespace: &'static str,
    /// What the agent does with it.
    pub why: &'static str,
}

impl Permission {
    /// `pods/status` or `leases.coordination.k8s.io`: how kubectl spells it.
    pub fn resource_name(&self) -> String {
        let mut s = self.resource.to_string();
        if !self.group.is_empty() {
            s = format!("{s}.{}", self.group);
        }
        if !self.subresource.is_empty() {
            s = format!("{s}/{}", self.subresource);
        }
        s
    }

    /// `patch pods/status` (plus ` in namespace X` when namespaced): the name doctor reports.
    pub fn display(&self) -> String {
        let mut s = format!("{} {}", self.verb, self.resource_name());
        if !self.namespace.is_empty() {
            s.push_str(&format!(" in namespace {}", self.namespace));
        }
        s
    }
}

const fn p(
    group: &'static str,
    resource: &'static str,
    subresource: &'static str,
    verb: &'static str,
    namespace: &'static str,
    why: &'static str,
) -> Permission {
    Permission {
        group,
        resource,
        subresource,
        verb,
        namespace,
        why,
    }
}

/// Always needed.
pub const ALWAYS: &[Permission] = &[
    p("", "nodes", "", "get", "", "read its own Node"),
    p(
        "",
        "nodes",
        "",
        "list",
        "",
        "watch its own Node (field selector)",
    ),
    p("", "nodes", "", "watch", "", "watch its own Node"),
    p("", "nodes", "", "create", "", "register the Node"),
    p(
        "",
        "nodes",
        "",
        "patch",
        "",
        "labels and annotations of its Node",
    ),
    p(
        "",
        "nodes",
        "status",
        "patch",
        "",
        "Node conditions, capacity, heartbeat",
    ),
    p("", "pods", "", "list", "", "list Pods bound to this Node"),
    p("", "pods", "", "watch", "", "watch Pods bound to this Node"),
    p(
        "",
        "pods",
        "",
        "patch",
        "",
        "add and remove the agent's finalizer",
    ),
    p(
        "",
        "pods",
        "",
        "delete",
        "",
        "final delete of a terminated Pod",
    ),
    p(
        "",
        "pods",
        "status",
        "patch",
        "",
        "Pod phase and container status",
    ),
    p("", "events", "", "create", "", "kubelet-style Node events"),
    p(
        "events.k8s.io",
        "events",
        "",
        "create",
        "",
        "kubelet-style Pod events",
    ),
    p(
        "events.k8s.io",
        "events",
        "",
        "patch",
        "",
        "event series updates",
    ),
    p(
        "coordination.k8s.io",
        "leases",
        "",
        "get",
        LEASE_NAMESPACE,
        "see who holds the Node Lease (start-up claim, after a conflicting renewal)",
    ),
    p(
        "coordination.k8s.io",
        "leases",
        "",
        "create",
        LEASE_NAMESPACE,
        "create the Node Lease",
    ),
    p(
        "coordination.k8s.io",
        "leases",
        "",
        "update",
        LEASE_NAMESPACE,
        "renew the Node Lease (update with a resourceVersion precondition)",
    ),
];

/// Needed with `--pull-credentials pod-secrets` (the default).
pub const POD_SECRETS: &[Permission] = &[p(
    "",
    "secrets",
    "",
    "get",
    "",
    "imagePullSecrets of Pods, for tart pull",
)];

/// Every permission the agent needs with this configuration.
pub fn required(cfg: &Config) -> Vec<Permission> {
    let mut v = ALWAYS.to_vec();
    if cfg.pull_credentials == PullCredentials::PodSecrets {
        v.extend_from_slice(POD_SECRETS);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_like_kubectl_auth_can_i() {
        let status = ALWAYS
            .iter()
            .find(|p| p.subresource == "status" && p.resource == "pods");
        assert_eq!(status.unwrap().display(), "patch pods/status");
        let lease = ALWAYS.iter().find(|p| p.resource == "leases").unwrap();
        assert_eq!(
            lease.display(),
            "get leases.coordination.k8s.io in namespace kube-node-lease"
        );
    }

    #[test]
    fn every_permission_is_listed_once() {
        let mut seen = std::collections::HashSet::new();
        for p in ALWAYS.iter().chain(POD_SECRETS) {
            assert!(seen.insert(p.display()), "duplicate {}", p.display());
        }
    }
}
