use super::*;

#[test]
fn a_node_identity_needs_nothing_the_node_authorizer_does_not_grant() {
    let node = required(Identity::Node);
    for p in node.iter().filter(|p| p.namespace != PREPULL_NAMESPACE) {
        assert!(
            !matches!(p.resource, "secrets" | "configmaps" | "serviceaccounts"),
            "{} is graph-limited for a node",
            p.display()
        );
        assert!(
            p.group != "events.k8s.io",
            "a node may not create {}",
            p.display()
        );
        assert!(
            !(p.resource == "pods" && p.verb == "patch" && p.subresource.is_empty()),
            "a node may not patch Pod metadata"
        );
    }
    assert_eq!(
        node.len() - NODE.len() + AGENT.len(),
        required(Identity::Agent).len()
    );
}

#[test]
fn the_agent_identity_reads_secrets_and_configmaps_only_by_name() {
    let agent = required(Identity::Agent);
    for res in ["secrets", "configmaps"] {
        let verbs: Vec<&str> = agent
            .iter()
            .filter(|p| p.resource == res && p.namespace != PREPULL_NAMESPACE)
            .map(|p| p.verb)
            .collect();
        assert!(verbs.iter().all(|v| *v == "get"), "{res}: {verbs:?}");
    }
    // The one ConfigMap watched is the pre-pull declaration, in the agent's own namespace.
    let own: Vec<&str> = agent
        .iter()
        .filter(|p| p.namespace == PREPULL_NAMESPACE && p.resource == "configmaps")
        .map(|p| p.verb)
        .collect();
    assert_eq!(own, ["list", "watch"]);
    assert!(
        agent
            .iter()
            .any(|p| p.display() == "create serviceaccounts/token")
    );
}

#[test]
fn lease_reads_and_renewals_name_the_own_lease() {
    for p in ALWAYS
        .iter()
        .filter(|p| p.resource == "leases" && p.namespace == LEASE_NAMESPACE)
    {
        assert_eq!(
            p.own_name,
            !matches!(p.verb, "create" | "list"),
            "{}",
            p.display()
        );
    }
}

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
    for p in ALWAYS.iter().chain(AGENT) {
        assert!(seen.insert(p.display()), "duplicate {}", p.display());
    }
}
