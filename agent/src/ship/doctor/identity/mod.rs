//! Doctor's verdict (pure) on whether credentials used with `--identity node` act as
//! `system:node:<node>`. A 1.20 API server cannot say who the caller is (no SelfSubjectReview),
//! so the Node authorizer is asked instead: it lets a node read its own Lease and no other
//! node's. Credentials that may read both are not confined to this node, whoever they are.
use super::checks::{Check, Status};

/// Name of a Lease no node owns, asked about to tell a node from a broader identity.
pub(crate) const OTHER_LEASE: &str = "tart-kubelet-doctor-probe";

/// Verdict from the reviews of reading the node's own Lease (`own`) and another one (`other`).
pub(crate) fn node_identity_check(
    node: &str,
    own: &Result<bool, String>,
    other: &Result<bool, String>,
) -> Check {
    const NAME: &str = "node-identity";
    let fix = format!(
        "use a client certificate with CN=system:node:{node} and O=system:nodes (docs/install.md#node-identity)"
    );
    match (own, other) {
        (Err(e), _) | (_, Err(e)) => {
            Check::new(NAME, Status::Fail, format!("cannot check the identity: {e}"))
        }
        (Ok(false), _) => Check::new(
            NAME,
            Status::Fail,
            format!("the credentials may not read Lease kube-node-lease/{node}: they are not system:node:{node}"),
        )
        .fix(fix),
        (Ok(true), Ok(true)) => Check::new(
            NAME,
            Status::Warn,
            format!("the credentials may read any node's Lease: they are not confined to node {node} as system:node:{node} is"),
        )
        .fix(format!("{fix}, or run with --identity agent")),
        (Ok(true), Ok(false)) => Check::new(
            NAME,
            Status::Ok,
            format!("the credentials act as system:node:{node}: the Node authorizer gives them this node's Lease only"),
        ),
    }
}

#[cfg(test)]
mod tests;
