//! The sandbox's side of the agents' pre-pull: the ConfigMap that names the next image, in the
//! `tart-kubelet` namespace (the shipped RBAC manifest, which the sandbox applies, creates it and
//! grants the agents what they need there). The ConfigMap's content and the cap it implies are
//! pure.

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api, Client,
    api::{Patch, PatchParams},
};
use serde_json::json;

/// The agents' namespace, where the pre-pull ConfigMap lives.
pub const NAMESPACE: &str = "tart-kubelet";
/// The ConfigMap the agents read by default (`--prepull-config`).
pub const CONFIG_MAP: &str = "tart-kubelet-prepull";
pub const DATA_KEY: &str = "prepull.json";
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
mod tests;
