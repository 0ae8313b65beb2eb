//! The node side: register this Mac as a Node, keep its Lease renewed, keep its status
//! (conditions, capacity, nodeInfo) current, and track tart/host health.
//!
//! Wiring only; the pieces are: [`spec`] (pure labels/taint/providerID), [`status`] (pure
//! status), [`health`] (health handle shared with the Pod side), [`probe`] (tart check),
//! [`lease`] (heartbeat task), [`status_loop`] (registration + status task), [`watch`] (one
//! watch on our own Node, shared with the Pod side).

pub mod events;
pub mod health;
pub mod lease;
pub mod probe;
pub mod spec;
pub mod status;
pub mod status_loop;
pub mod watch;

use std::{
    collections::BTreeSet,
    sync::{Arc, Mutex},
};

use k8s_openapi::api::core::v1::Node;
use kube::{
    Client, Resource,
    api::{Api, Patch, PatchParams, PostParams},
};
use tracing::{debug, error, info, warn};

use crate::{config::Config, host::HostFacts};

/// Field manager / user-visible identity of our writes.
pub const FIELD_MANAGER: &str = "tart-kubelet";

/// Logs API failures; a 403 is logged once (at `error`, naming the verb and resource) until
/// that call succeeds again, so a missing RBAC rule is one clear line, not a flood.
#[derive(Clone, Debug, Default)]
pub struct ApiAccess {
    forbidden: Arc<Mutex<BTreeSet<(&'static str, &'static str)>>>,
}

impl ApiAccess {
    /// `verb` on `resource` failed with `err`.
    pub fn failed(&self, verb: &'static str, resource: &'static str, err: &kube::Error) {
        if let kube::Error::Api(s) = err
            && s.code == 403
        {
            let first = self.lock().insert((verb, resource));
            if first {
                error!(
                    verb,
                    resource,
                    reason = %s.message,
                    "forbidden: cannot {verb} {resource}; grant it to the agent (packaging/kubernetes/rbac.yaml)"
                );
            } else {
                debug!(verb, resource, "still forbidden");
            }
            return;
        }
        warn!(verb, resource, error = %err, "api request failed");
    }

    /// `verb` on `resource` succeeded.
    pub fn ok(&self, verb: &'static str, resource: &'static str) {
        let mut f = self.lock();
        if !f.is_empty() {
            f.remove(&(verb, resource));
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeSet<(&'static str, &'static str)>> {
        self.forbidden
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Why registration failed.
#[derive(Debug, thiserror::Error)]
pub enum RegisterError {
    /// An API call failed.
    #[error("{verb} node failed")]
    Api {
        /// The verb.
        verb: &'static str,
        /// Cause.
        #[source]
        source: kube::Error,
    },
    /// An API call passed its deadline.
    #[error("{verb} node timed out")]
    Timeout {
        /// The verb.
        verb: &'static str,
    },
}

/// Create our Node, or bring an existing one's labels and providerID up to date (the taint is
/// only set at creation). Returns the Node as stored.
///
/// # Errors
/// [`RegisterError`] for the first failed or timed-out call.
pub async fn register(
    client: &Client,
    cfg: &Config,
    facts: &HostFacts,
    tart_version: Option<&str>,
    access: &ApiAccess,
) -> Result<Node, RegisterError> {
    let api: Api<Node> = Api::all(client.clone());
    let t = cfg.api_timeout;
    let desired = spec::desired_labels(cfg, facts, tart_version);
    let call = |verb: &'static str, r: Result<Result<Node, kube::Error>, _>| match r {
        Ok(Ok(n)) => {
            access.ok(verb, "nodes");
            Ok(n)
        }
        Ok(Err(source)) => {
            access.failed(verb, "nodes", &source);
            Err(RegisterError::Api { verb, source })
        }
        Err(tokio::time::error::Elapsed { .. }) => Err(RegisterError::Timeout { verb }),
    };
    let existing = match tokio::time::timeout(t, api.get_opt(&cfg.node_name)).await {
        Ok(Ok(n)) => n,
        Ok(Err(source)) => {
            access.failed("get", "nodes", &source);
            return Err(RegisterError::Api {
                verb: "get",
                source,
            });
        }
        Err(_) => return Err(RegisterError::Timeout { verb: "get" }),
    };
    let node = match existing {
        None => {
            let node = spec::new_node(cfg, desired);
            let r = tokio::time::timeout(t, api.create(&PostParams::default(), &node)).await;
            let created = call("create", r)?;
            info!(node = %cfg.node_name, "node created");
            created
        }
        Some(existing) => match spec::update_patch(&existing, &desired) {
            None => existing,
            Some(patch) => {
                let pp = PatchParams::default();
                let r =
                    tokio::time::timeout(t, api.patch(&cfg.node_name, &pp, &Patch::Merge(&patch)))
                        .await;
                let updated = call("patch", r)?;
                info!(node = %cfg.node_name, "node labels updated");
                updated
            }
        },
    };
    Ok(node)
}

/// Owner reference to `node` (for the Lease), if the Node has a UID.
pub fn owner_ref(
    node: &Node,
) -> Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference> {
    node.controller_owner_ref(&()).map(|mut o| {
        // The Lease is owned, not controlled, by the Node (as kubelet does).
        o.controller = None;
        o.block_owner_deletion = None;
        o
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api_err(code: u16) -> kube::Error {
        kube::Error::Api(Box::new(kube::core::Status {
            code,
            message: "m".into(),
            ..Default::default()
        }))
    }

    #[test]
    fn forbidden_is_remembered_until_the_call_succeeds() {
        let a = ApiAccess::default();
        a.failed("patch", "nodes/status", &api_err(403));
        assert!(a.lock().contains(&("patch", "nodes/status")));
        a.ok("patch", "nodes/status");
        assert!(a.lock().is_empty());
    }
}
