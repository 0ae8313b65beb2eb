//! The sandbox's side of the agents' pre-pull: the `tart-kubelet` namespace with the rights the
//! agents need there (read the pre-pull ConfigMap, hold pull Leases), and the ConfigMap that
//! names the next image. The ConfigMap's content and the cap it implies are pure.

use std::time::Duration;

use k8s_openapi::api::{
    core::v1::{ConfigMap, Namespace},
    rbac::v1::{Role, RoleBinding},
};
use kube::{
    Api, Client,
    api::{Patch, PatchParams},
};
use serde_json::json;

/// The agents' namespace, where the pre-pull ConfigMap and the pull Leases live.
pub const NAMESPACE: &str = "tart-kubelet";
/// The ConfigMap the agents read by default (`--prepull-config`).
pub const CONFIG_MAP: &str = "tart-kubelet-prepull";
/// Its data key.
pub const DATA_KEY: &str = "prepull.json";
/// The group every simulated Mac's user is in.
const AGENT_GROUP: &str = "tart-kubelets";
/// The Nodes the runner Pods select, and so the ones that pre-pull.
const NODE_SELECTOR: (&str, &str) = ("type", "virtual-kubelet");

/// How many agents may pre-pull one image at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pacing {
    /// `maxConcurrentPulls`.
    pub max_pulls: u32,
    /// `maxConcurrentPercent`.
    pub max_percent: u32,
}

impl Pacing {
    /// The cap on `matching` Nodes: `max(1, min(maxConcurrentPulls, ceil(percent × matching)))`.
    pub fn cap(&self, matching: u32) -> u32 {
        let by_percent = (u64::from(self.max_percent) * u64::from(matching)).div_ceil(100);
        (u64::from(self.max_pulls).min(by_percent).max(1)) as u32
    }
}

/// The `prepull.json` naming `image` for the runner Nodes.
pub fn config(image: &str, pacing: &Pacing) -> serde_json::Value {
    json!({
        "images": [{ "image": image, "nodeSelector": { NODE_SELECTOR.0: NODE_SELECTOR.1 } }],
        "maxConcurrentPulls": pacing.max_pulls,
        "maxConcurrentPercent": pacing.max_percent,
    })
}

/// Creates the namespace (if the shipped RBAC has not) and lets the agents' group read the
/// pre-pull ConfigMap and manage pull Leases there.
pub async fn grant(admin: &Client, deadline: Duration) -> anyhow::Result<()> {
    let ns: Namespace = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Namespace", "metadata": { "name": NAMESPACE }
    }))?;
    let role: Role = serde_json::from_value(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": { "name": "tart-kubelet-sandbox-prepull", "namespace": NAMESPACE },
        "rules": [
            { "apiGroups": [""], "resources": ["configmaps"], "resourceNames": [CONFIG_MAP],
              "verbs": ["get", "list", "watch"] },
            { "apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
              "verbs": ["get", "list", "watch", "create", "update", "delete"] }
        ]
    }))?;
    let binding: RoleBinding = serde_json::from_value(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": { "name": "tart-kubelet-sandbox-prepull", "namespace": NAMESPACE },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                     "name": "tart-kubelet-sandbox-prepull" },
        "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": AGENT_GROUP }]
    }))?;
    let pp = PatchParams::apply("tart-kubelet-sandbox").force();
    let namespaces: Api<Namespace> = Api::all(admin.clone());
    tokio::time::timeout(
        deadline,
        namespaces.patch(NAMESPACE, &pp, &Patch::Apply(&ns)),
    )
    .await??;
    let roles: Api<Role> = Api::namespaced(admin.clone(), NAMESPACE);
    tokio::time::timeout(
        deadline,
        roles.patch("tart-kubelet-sandbox-prepull", &pp, &Patch::Apply(&role)),
    )
    .await??;
    let bindings: Api<RoleBinding> = Api::namespaced(admin.clone(), NAMESPACE);
    tokio::time::timeout(
        deadline,
        bindings.patch("tart-kubelet-sandbox-prepull", &pp, &Patch::Apply(&binding)),
    )
    .await??;
    Ok(())
}

/// Writes (or replaces) the pre-pull ConfigMap so that it names `image`.
pub async fn announce(
    admin: &Client,
    image: &str,
    pacing: &Pacing,
    deadline: Duration,
) -> anyhow::Result<()> {
    let cm: ConfigMap = serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": { "name": CONFIG_MAP, "namespace": NAMESPACE },
        "data": { DATA_KEY: config(image, pacing).to_string() }
    }))?;
    let api: Api<ConfigMap> = Api::namespaced(admin.clone(), NAMESPACE);
    let pp = PatchParams::apply("tart-kubelet-sandbox").force();
    tokio::time::timeout(deadline, api.patch(CONFIG_MAP, &pp, &Patch::Apply(&cm))).await??;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_is_the_smaller_limit_rounded_up_and_never_zero() {
        let p = Pacing {
            max_pulls: 2,
            max_percent: 50,
        };
        assert_eq!(p.cap(3), 2, "ceil(1.5) = 2");
        assert_eq!(p.cap(1), 1);
        assert_eq!(p.cap(10), 2);
        let p = Pacing {
            max_pulls: 5,
            max_percent: 25,
        };
        assert_eq!(p.cap(3), 1, "ceil(0.75) = 1");
        assert_eq!(p.cap(0), 1);
    }

    #[test]
    fn the_config_names_the_image_for_the_runner_nodes_with_both_limits() {
        let v = config(
            "ghcr.io/acme/macos-runner:v2",
            &Pacing {
                max_pulls: 2,
                max_percent: 25,
            },
        );
        assert_eq!(
            v,
            json!({"images": [{"image": "ghcr.io/acme/macos-runner:v2",
                               "nodeSelector": {"type": "virtual-kubelet"}}],
                   "maxConcurrentPulls": 2, "maxConcurrentPercent": 25})
        );
    }
}
