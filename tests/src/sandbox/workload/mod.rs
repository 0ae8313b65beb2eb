//! The sandbox's workloads: a pool of ephemeral CI-runner Pods kept at a target size, each
//! replaced as it finishes, until a number of lifecycles has completed. Talks to the API, and
//! reads a finished runner's guest exit code from its status share before deleting the Pod
//! ([`super::guest`]).

use std::{
    collections::{BTreeMap, BTreeSet},
    time::Duration,
};

use k8s_openapi::api::core::v1::Pod;
use kube::{
    Api, Client,
    api::{DeleteParams, ListParams, PostParams},
};
use serde_json::json;

use super::guest::{self, Check, GuestDirs, Job};

/// How a finished Pod ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// `Succeeded`.
    Succeeded,
    /// `Failed`.
    Failed,
}

impl Ending {
    /// The end a Pod's phase shows, if it is a terminal one.
    pub fn of_phase(phase: &str) -> Option<Ending> {
        match phase {
            "Succeeded" => Some(Ending::Succeeded),
            "Failed" => Some(Ending::Failed),
            _ => None,
        }
    }
}

/// What the pool has done so far.
#[derive(Debug, Clone, Default)]
pub struct PoolState {
    /// Pods created.
    pub created: u64,
    /// Pods seen finished, by name.
    pub ended: BTreeMap<String, Ending>,
    /// Pods seen Running at least once.
    pub ran: BTreeSet<String>,
    /// Pods currently present (any phase), by name -> phase.
    pub present: BTreeMap<String, String>,
    /// The node each Pod was seen bound to, by name.
    pub nodes: BTreeMap<String, String>,
    /// Finished runners' secret checks, by name (only when the guest runs their job).
    pub checks: BTreeMap<String, Check>,
    /// Pods deleted before anyone saw them end (only `fleet`'s Pod watch can tell): lost.
    pub lost: BTreeSet<String>,
}

/// What the runner Pods run, and where their guests' status shares are.
#[derive(Debug, Clone, Default)]
pub struct Runners {
    /// The job each runner's container runs (`None`: no command, the VM's timer ends it).
    pub job: Option<Job>,
    /// The agents' guest directories.
    pub guest_dirs: GuestDirs,
}

/// One step's settings.
#[derive(Debug, Clone)]
pub struct Round<'a> {
    /// Namespace of the pool.
    pub ns: &'a str,
    /// Pods kept active.
    pub pool: usize,
    /// Pods to create in all.
    pub total: u64,
    /// Image of the Pods created now.
    pub image: &'a str,
    /// What the runners run.
    pub runners: &'a Runners,
    /// Deadline of each API request.
    pub api_deadline: Duration,
}

impl PoolState {
    /// Pods present and not finished.
    pub fn active(&self) -> usize {
        self.present
            .iter()
            .filter(|(n, _)| !self.ended.contains_key(*n))
            .count()
    }

    /// How many to create now to keep `pool` active, without passing `total`.
    pub fn to_create(&self, pool: usize, total: u64) -> usize {
        let room = pool.saturating_sub(self.active());
        let left = total.saturating_sub(self.created) as usize;
        room.min(left)
    }

    /// All `total` Pods were created and are gone, each seen ended or lost (nothing is left to
    /// wait for: a lost Pod fails `pods_in_expected_terminal_state`).
    pub fn done(&self, total: u64) -> bool {
        self.created >= total
            && self.present.is_empty()
            && (self.ended.len() + self.lost.len()) as u64 >= total
    }
}

/// The runner image of every scenario but `image-roll` (which rolls it, [`super::roll`]).
pub const IMAGE: &str = "ghcr.io/cirruslabs/macos-tahoe-base:v1";

/// The Pod a CI runner is: one container whose image is a Tart VM image, tolerating our taint;
/// with a `job`, the container runs it with the token from the runner Secret in its env.
pub fn runner_pod(name: &str, image: &str, cpu: &str, memory: &str, job: Option<&Job>) -> Pod {
    let mut pod: Pod = serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": { "name": name, "labels": { "app": "ci-runner" } },
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 10,
            "nodeSelector": { "type": "virtual-kubelet" },
            "tolerations": [{ "key": "virtual-kubelet.io/provider", "operator": "Exists", "effect": "NoSchedule" }],
            "containers": [{
                "name": "runner",
                "image": image,
                "imagePullPolicy": "IfNotPresent",
                "resources": { "requests": { "cpu": cpu, "memory": memory } }
            }]
        }
    }))
    .expect("static pod literal");
    if let (Some(job), Some(spec)) = (job, pod.spec.as_mut()) {
        let c = &mut spec.containers[0];
        c.command = Some(job.command());
        c.args = Some(job.args());
        c.env = Some(vec![
            serde_json::from_value(json!({
                "name": guest::ENV_NAME,
                "valueFrom": { "secretKeyRef": { "name": guest::SECRET_NAME, "key": guest::SECRET_KEY } }
            }))
            .expect("static env literal"),
        ]);
    }
    pod
}

/// One step of the pool: observe Pods, record finished runners' secret checks, delete
/// finished Pods, create replacements. Returns the names created in this step.
pub async fn step(
    client: &Client,
    round: &Round<'_>,
    state: &mut PoolState,
) -> anyhow::Result<Vec<String>> {
    let api_deadline = round.api_deadline;
    let api: Api<Pod> = Api::namespaced(client.clone(), round.ns);
    let pods = tokio::time::timeout(api_deadline, api.list(&ListParams::default())).await??;
    state.present.clear();
    for p in pods.items {
        let name = p.metadata.name.clone().unwrap_or_default();
        let phase = p
            .status
            .as_ref()
            .and_then(|s| s.phase.clone())
            .unwrap_or_else(|| "Pending".into());
        if phase == "Running" {
            state.ran.insert(name.clone());
        }
        if let Some(node) = p.spec.as_ref().and_then(|s| s.node_name.clone()) {
            state.nodes.insert(name.clone(), node);
        }
        if let Some(e) = Ending::of_phase(&phase) {
            state.ended.entry(name.clone()).or_insert(e);
            if round.runners.job.is_some() && !state.checks.contains_key(&name) {
                // The agent keeps a finished Pod's VM, and so its status share, until the
                // Pod is deleted: below, or already (the Pod garbage collector's), which
                // leaves the check unmade.
                let uid = p.metadata.uid.as_deref().unwrap_or_default();
                let exit = round.runners.guest_dirs.exit_code(&guest::vm_of(uid));
                let deleting = p.metadata.deletion_timestamp.is_some();
                let check = Check::classify_seen(e == Ending::Succeeded, deleting, exit);
                state.checks.insert(name.clone(), check);
            }
            if p.metadata.deletion_timestamp.is_none() {
                let _ =
                    tokio::time::timeout(api_deadline, api.delete(&name, &DeleteParams::default()))
                        .await;
            }
        }
        state.present.insert(name, phase);
    }
    let mut created = Vec::new();
    for _ in 0..state.to_create(round.pool, round.total) {
        let name = format!("runner-{:04}", state.created + 1);
        let mut pod = runner_pod(&name, round.image, "4", "8Gi", round.runners.job.as_ref());
        if super::profile::uses_profile(state.created + 1)
            && let Some(spec) = pod.spec.as_mut()
        {
            spec.runtime_class_name = Some(super::profile::RUNTIME_CLASS.into());
        }
        tokio::time::timeout(api_deadline, api.create(&PostParams::default(), &pod)).await??;
        state.created += 1;
        state.present.insert(name.clone(), "Pending".into());
        created.push(name);
    }
    Ok(created)
}

#[cfg(test)]
mod tests;
