//! The sandbox's VM profile: every simulated Mac serves a softnet profile (for untrusted jobs,
//! isolated from the LAN and the other VMs), and some of the workload's runners ask for it
//! through a RuntimeClass whose `scheduling.nodeSelector` is the handler's Node label
//! (docs/pods.md, "VM profiles").

use std::path::{Path, PathBuf};

use k8s_openapi::api::node::v1::RuntimeClass;
use kube::{
    Api, Client,
    api::{Patch, PatchParams},
};
use serde_json::json;

/// The profile's name, the RuntimeClass's `handler`.
pub const HANDLER: &str = "sandbox-softnet";
/// The RuntimeClass the runners name.
pub const RUNTIME_CLASS: &str = "tart-sandbox-isolated";
/// One runner in this many asks for the softnet profile.
pub const EVERY: u64 = 3;

/// Write the agents' configuration file with the profile into `dir`; its path.
pub fn write_agent_config(dir: &Path) -> std::io::Result<PathBuf> {
    let path = dir.join("tart-kubelet.toml");
    let toml = format!(
        "[vm_profiles.{HANDLER}]\n\
         network = \"softnet\"\n\
         softnet_allow = [\"10.0.0.0/8\"]\n\
         softnet_block = [\"10.0.0.1/32\"]\n"
    );
    std::fs::write(&path, toml)?;
    Ok(path)
}

/// Create or update the RuntimeClass (server-side apply, so a second run changes nothing).
pub async fn apply_runtime_class(admin: &Client) -> anyhow::Result<()> {
    let api: Api<RuntimeClass> = Api::all(admin.clone());
    let rc = json!({
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": { "name": RUNTIME_CLASS },
        "handler": HANDLER,
        "scheduling": {
            "nodeSelector": { format!("runtime-handler.tart.run/{HANDLER}"): "true" }
        }
    });
    let pp = PatchParams::apply("tart-kubelet-sandbox").force();
    tokio::time::timeout(
        std::time::Duration::from_secs(10),
        api.patch(RUNTIME_CLASS, &pp, &Patch::Apply(&rc)),
    )
    .await??;
    Ok(())
}

/// Whether the `n`th runner (from 1) asks for the profile.
pub fn uses_profile(n: u64) -> bool {
    n.is_multiple_of(EVERY)
}
