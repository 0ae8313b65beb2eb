//! The node side: register this Mac as a Node, keep its Lease renewed, keep its status
//! (conditions, capacity, nodeInfo) current, and track tart/host health.
//!
//! Wiring only; the pieces are: [`spec`] (pure labels/taint/providerID), [`status`] (pure
//! status), [`health`] (health handle shared with the Pod side), [`probe`] (tart check),
//! [`holder`] (pure: who may hold the Lease), [`claim`] (the start-up claim of the Lease),
//! [`lease`] (heartbeat task), [`fence`] (stop acting when another instance holds the Lease),
//! [`status_loop`] (registration + status task), [`status_due`] (pure: is a status write due),
//! [`access`] (quiet transient 403s), [`watch`] (one watch on our own Node, shared with the
//! Pod side), [`quarantine`] (pure: repeated host faults), [`gate`] (pure: keep new Pods away
//! without evicting), [`readiness`] (the host-check task, the cordon and their metrics).

pub(crate) mod access;
pub(crate) mod claim;
pub(crate) mod events;
pub(crate) mod fence;
pub(crate) mod gate;
pub(crate) mod health;
pub(crate) mod holder;
pub(crate) mod lease;
pub(crate) mod probe;
pub(crate) mod quarantine;
pub(crate) mod readiness;
pub(crate) mod spec;
pub(crate) mod status;
pub(crate) mod status_due;
pub(crate) mod status_loop;
pub(crate) mod watch;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Node;
use kube::{
    Client, Resource,
    api::{Api, Patch, PatchParams, PostParams},
};
use tracing::info;

pub(crate) use access::ApiAccess;

use crate::{config::Config, host::HostFacts};

/// Field manager / user-visible identity of our writes.
pub(crate) const FIELD_MANAGER: &str = "tart-kubelet";

/// Why registration failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RegisterError {
    /// An API call failed.
    #[error("{verb} node failed")]
    Api {
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
pub(crate) async fn register(
    client: &Client,
    cfg: &Config,
    facts: &HostFacts,
    tart_version: Option<&str>,
    unavailable: &BTreeMap<String, String>,
    access: &ApiAccess,
) -> Result<Node, RegisterError> {
    let api: Api<Node> = Api::all(client.clone());
    let t = cfg.api_timeout;
    let desired = spec::desired_labels(cfg, facts, tart_version, unavailable);
    let annotation = spec::unavailable_annotation(unavailable);
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
            let node = spec::new_node(cfg, desired, annotation);
            let r = tokio::time::timeout(t, api.create(&PostParams::default(), &node)).await;
            let created = call("create", r)?;
            info!(node = %cfg.node_name, "node created");
            created
        }
        Some(existing) => match spec::update_patch(&existing, &desired, annotation.as_deref()) {
            None => existing,
            Some(patch) => {
                let pp = PatchParams::default();
                let r =
                    tokio::time::timeout(t, api.patch(&cfg.node_name, &pp, &Patch::Merge(&patch)))
                        .await;
                let updated = call("patch", r)?;
                info!(node = %cfg.node_name, "node labels and annotations updated");
                updated
            }
        },
    };
    Ok(node)
}

/// Owner reference to `node` (for the Lease), if the Node has a UID.
pub(crate) fn owner_ref(
    node: &Node,
) -> Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference> {
    node.controller_owner_ref(&()).map(|mut o| {
        // The Lease is owned, not controlled, by the Node (as kubelet does).
        o.controller = None;
        o.block_owner_deletion = None;
        o
    })
}
