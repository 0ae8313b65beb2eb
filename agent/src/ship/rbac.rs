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

/// A verb on a core resource, cluster-wide.
const fn core(resource: &'static str, verb: &'static str, why: &'static str) -> Permission {
    p("", resource, "", verb, "", why)
}

/// `patch` on a core resource's `status`.
const fn status(resource: &'static str, why: &'static str) -> Permission {
    p("", resource, "status", "patch", "", why)
}

/// A verb on Leases in the node-lease namespace.
const fn lease(verb: &'static str, why: &'static str) -> Permission {
    p(
        "coordination.k8s.io",
        "leases",
        "",
        verb,
        LEASE_NAMESPACE,
        why,
    )
}

/// Always needed.
pub const ALWAYS: &[Permission] = &[
    core("nodes", "get", "read its own Node"),
    core("nodes", "list", "watch its own Node (field selector)"),
    core("nodes", "watch", "watch its own Node"),
    core("nodes", "create", "register the Node"),
    core("nodes", "patch", "labels and annotations of its Node"),
    status("nodes", "Node conditions, capacity, heartbeat"),
    core("pods", "list", "list Pods bound to this Node"),
    core("pods", "watch", "watch Pods bound to this Node"),
    core("pods", "patch", "add and remove the agent's finalizer"),
    core("pods", "delete", "final delete of a terminated Pod"),
    status("pods", "Pod phase and container status"),
    core("events", "create", "kubelet-style Node events"),
    p(
        "events.k8s.io",
        "events",
        "",
        "create",
        "",
        "kubelet-style Pod events",
    ),
    lease(
        "get",
        "see who holds the Node Lease (start-up claim, a conflicting renewal)",
    ),
    lease("create", "create the Node Lease"),
    p(
        "authentication.k8s.io",
        "tokenreviews",
        "",
        "create",
        "",
        "kubelet API: authenticate callers' bearer tokens",
    ),
    p(
        "authorization.k8s.io",
        "subjectaccessreviews",
        "",
        "create",
        "",
        "kubelet API: authorize callers on nodes/<subresource>",
    ),
    lease(
        "update",
        "renew the Node Lease (with a resourceVersion precondition)",
    ),
];

/// Needed with `--pull-credentials pod-secrets` (the default).
pub const POD_SECRETS: &[Permission] = &[core(
    "secrets",
    "get",
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
