//! The Kubernetes API permissions the agent needs, per identity, as data: `doctor` asks the
//! API server about each one with a SelfSubjectAccessReview, and tests/tests/e2e/ship_rbac.rs
//! checks that packaging/kubernetes/rbac.yaml grants exactly the agent identity's (plus doctor's own
//! review) — every one, and nothing more. A node identity (`system:node:<name>`) needs no
//! manifest: the Node authorizer grants it [`ALWAYS`], and only Secrets and ConfigMaps of Pods
//! bound to it.
use crate::config::Identity;

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
    pub verb: &'static str,
    /// Namespace (`""` = all namespaces / cluster-scoped).
    pub namespace: &'static str,
    /// The request names the agent's own object, the Node or its Lease (the node name): a
    /// node identity may use only its own Lease, so its review must say which.
    pub own_name: bool,
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
        own_name: false,
        why,
    }
}

/// `perm`, naming the agent's own Node or Lease.
const fn own(perm: Permission) -> Permission {
    Permission {
        own_name: true,
        ..perm
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

/// Needed under either identity. A node has each from the Node authorizer's static rules;
/// NodeRestriction confines its writes to its own Node, Lease and Pods.
/// Namespace of the pre-pull declaration and the fleet's pull tokens (the default of
/// `--prepull-config`; the shipped manifest grants it there).
pub const PREPULL_NAMESPACE: &str = "tart-kubelet";

const fn prepull(
    group: &'static str,
    resource: &'static str,
    verb: &'static str,
    why: &'static str,
) -> Permission {
    p(group, resource, "", verb, PREPULL_NAMESPACE, why)
}

pub const ALWAYS: &[Permission] = &[
    own(core("nodes", "get", "read its own Node")),
    core("nodes", "list", "watch its own Node (field selector)"),
    core("nodes", "watch", "watch its own Node"),
    core("nodes", "create", "register the Node"),
    own(core("nodes", "patch", "labels and annotations of its Node")),
    own(status("nodes", "Node conditions, capacity, heartbeat")),
    core("pods", "list", "list Pods bound to this Node"),
    core("pods", "watch", "watch Pods bound to this Node"),
    core("pods", "delete", "final delete of a terminated Pod"),
    status("pods", "Pod phase and container status"),
    core(
        "events",
        "create",
        "kubelet-style Node events (and Pod events under a node identity)",
    ),
    own(lease(
        "get",
        "see who holds the Node Lease (start-up claim, a conflicting renewal)",
    )),
    lease("create", "create the Node Lease"),
    own(lease(
        "update",
        "renew the Node Lease (with a resourceVersion precondition)",
    )),
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
    csr(
        "create",
        "request the kubelet API's serving certificate (no --tls-cert-file)",
    ),
    csr(
        "get",
        "see whether the serving certificate request is approved and issued",
    ),
    csr(
        "watch",
        "wait for the serving certificate request's approval",
    ),
    p(
        "node.k8s.io",
        "runtimeclasses",
        "",
        "list",
        "",
        "the RuntimeClass cache: a Pod's class names its VM profile",
    ),
    p(
        "node.k8s.io",
        "runtimeclasses",
        "",
        "watch",
        "",
        "keep the RuntimeClass cache current",
    ),
    prepull(
        "",
        "configmaps",
        "list",
        "watch the pre-pull declaration (field selector)",
    ),
    prepull("", "configmaps", "watch", "watch the pre-pull declaration"),
    lease(
        "list",
        "count the image-pull tokens on the Node Leases (fleet-wide pull pacing)",
    ),
];

/// A verb on CertificateSigningRequests (cluster-scoped). The Node authorizer grants a node
/// these (and `list`) through its static node rules; the agent never lists them.
const fn csr(verb: &'static str, why: &'static str) -> Permission {
    p(
        "certificates.k8s.io",
        "certificatesigningrequests",
        "",
        verb,
        "",
        why,
    )
}

/// Needed only under the agent identity (`--identity agent`). A node gets the Secrets and
/// ConfigMaps of its own Pods from the Node authorizer, never the rest.
pub const AGENT: &[Permission] = &[
    core("pods", "patch", "add and remove the agent's finalizer"),
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
        "count a repeated Pod event into its Event (series)",
    ),
    core(
        "secrets",
        "get",
        "imagePullSecrets and the env and volume Secrets of its Pods (never list or watch)",
    ),
    core(
        "configmaps",
        "get",
        "the env and volume ConfigMaps of its Pods (never list or watch)",
    ),
    p(
        "",
        "serviceaccounts",
        "token",
        "create",
        "",
        "service-account tokens projected into its Pods",
    ),
];

/// Needed only under a node identity (`--identity node`), whose Pod events are core/v1
/// Events; the Node authorizer grants a node these.
pub const NODE: &[Permission] = &[core(
    "events",
    "patch",
    "count a repeated Pod event into its Event (count, lastTimestamp)",
)];

/// Every permission the agent needs under `identity`.
pub fn required(identity: Identity) -> Vec<Permission> {
    let mut v = ALWAYS.to_vec();
    match identity {
        Identity::Agent => v.extend_from_slice(AGENT),
        Identity::Node => v.extend_from_slice(NODE),
    }
    v
}

#[cfg(test)]
mod tests;
