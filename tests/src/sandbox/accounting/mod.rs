//! The `api` scenario: one Mac; an idle window (`--idle-seconds`), then one plain Pod and one
//! runner Pod (the runner Secret in its env and a projected service-account token volume laid
//! out as the API server's ServiceAccount admission lays out `kube-api-access-*`), one after
//! the other, each alone in a namespace of its own, so that the agents' requests in that
//! namespace are its lifecycle's. Each Pod is deleted once it has ended, as a CI system deletes
//! a finished runner. The figures come from the audit log ([`super::report::requests`]).

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, ServiceAccount};
use kube::{
    Api, Client,
    api::{DeleteParams, PostParams},
};
use serde_json::json;

use super::{
    guest::{Job, RunnerToken},
    probe,
    progress::Progress,
    report::requests::{self, ApiAccounting, Lifecycle},
    workload::{Ending, IMAGE, PoolState, runner_pod},
};

/// The agents' user in the sandbox.
pub const USER: &str = "tart-kubelet-sandbox";

/// Start-up traffic (registration, first status, watches) settles before the idle window.
const SETTLE: Duration = Duration::from_secs(15);

/// After a Pod is gone, how long its last requests (an Event, a finalizer) may still arrive.
const AFTER: Duration = Duration::from_secs(5);

/// The two Pods measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// A command, nothing else.
    Plain,
    /// The job reading the runner Secret from its env, and a projected token volume.
    Runner,
}

impl Shape {
    fn name(self) -> &'static str {
        match self {
            Shape::Plain => "plain",
            Shape::Runner => "runner",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Shape::Plain => "a command",
            Shape::Runner => "a command, a Secret in its env, a projected token volume",
        }
    }
}

/// What the scenario needs from the run.
pub struct Run<'a> {
    pub admin: &'a Client,
    pub audit_log: std::path::PathBuf,
    pub idle: Duration,
    /// The job each Pod runs (`None` with `--no-guest`: the VM's timer ends it).
    pub job: Option<Job>,
    pub token: RunnerToken,
    pub deadline: Duration,
    /// The cluster CA (PEM), for the namespace's `kube-root-ca.crt`.
    pub ca_crt: String,
}

/// Runs the idle window and the two lifecycles; records the Pods in `pool`.
///
/// # Errors
/// A Pod that did not end or go away in time, or the API refusing the admin's requests.
pub async fn run(
    r: &Run<'_>,
    pool: &mut PoolState,
    progress: &mut Progress,
) -> anyhow::Result<ApiAccounting> {
    wait(progress, "api: start-up settles", SETTLE).await;
    let from = probe::now_rfc3339();
    let t = Instant::now();
    wait(progress, "api: idle window", r.idle).await;
    let to = probe::now_rfc3339();
    let minutes = t.elapsed().as_secs_f64() / 60.0;
    let mut windows = vec![];
    for shape in [Shape::Plain, Shape::Runner] {
        let ns = format!("api-{}", shape.name());
        prepare(r, &ns, shape).await?;
        let start = probe::now_rfc3339();
        let t = Instant::now();
        let ending = lifecycle(r, &ns, shape, progress).await?;
        let seconds = t.elapsed().as_secs_f64();
        pool.created += 1;
        pool.ended.insert(ns.clone(), ending);
        wait(progress, "api: the last requests arrive", AFTER).await;
        windows.push((shape, ns, start, probe::now_rfc3339(), seconds));
    }
    let log = requests::parse(&probe::audit_log(&r.audit_log));
    Ok(ApiAccounting {
        idle: requests::idle(&log, USER, &from, &to, minutes),
        lifecycles: windows
            .into_iter()
            .map(|(shape, ns, start, end, seconds)| Lifecycle {
                pod: shape.name().into(),
                shape: shape.describe().into(),
                seconds,
                breakdown: requests::lifecycle(&log, USER, &ns, &start, &end),
            })
            .collect(),
    })
}

/// A measured wait, shown as progress.
async fn wait(progress: &mut Progress, what: &str, d: Duration) {
    let end = Instant::now() + d;
    while Instant::now() < end {
        progress.status(&format!(
            "{what}, {} s left",
            end.saturating_duration_since(Instant::now()).as_secs()
        ));
        tokio::time::sleep(Duration::from_millis(500).min(d)).await;
    }
}

/// The Pod's namespace with what the Pod reads: for the runner, the Secret, its
/// ServiceAccount and the `kube-root-ca.crt` ConfigMap (made here as a full controller
/// manager's ServiceAccount and root-CA publishers would: the test control plane runs
/// neither).
async fn prepare(r: &Run<'_>, ns: &str, shape: Shape) -> anyhow::Result<()> {
    let api: Api<Namespace> = Api::all(r.admin.clone());
    let obj: Namespace = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Namespace", "metadata": { "name": ns }
    }))?;
    match api.create(&PostParams::default(), &obj).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => return Err(e.into()),
    }
    if shape == Shape::Runner {
        r.token.store(r.admin, ns).await?;
        let sa: Api<ServiceAccount> = Api::namespaced(r.admin.clone(), ns);
        let ca: Api<ConfigMap> = Api::namespaced(r.admin.clone(), ns);
        let made = [
            sa.create(
                &PostParams::default(),
                &serde_json::from_value(json!({ "metadata": { "name": "default" } }))?,
            )
            .await
            .map(drop),
            ca.create(
                &PostParams::default(),
                &serde_json::from_value(json!({
                    "metadata": { "name": "kube-root-ca.crt" },
                    "data": { "ca.crt": r.ca_crt }
                }))?,
            )
            .await
            .map(drop),
        ];
        for m in made {
            match m {
                Ok(()) => {}
                Err(kube::Error::Api(s)) if s.code == 409 => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
    Ok(())
}

/// The Pod of `shape`.
fn pod(r: &Run<'_>, shape: Shape) -> Pod {
    let name = shape.name();
    // The steady workload's requests: a Tart VM has at least 4 cores.
    let mut pod = match shape {
        Shape::Runner => runner_pod(name, IMAGE, "4", "8Gi", r.job.as_ref()),
        Shape::Plain => runner_pod(name, IMAGE, "4", "8Gi", None),
    };
    let spec = pod.spec.as_mut().expect("a runner Pod has a spec");
    let c = &mut spec.containers[0];
    if let (Shape::Plain, Some(job)) = (shape, &r.job) {
        c.command = Some(vec![
            "/bin/sh".into(),
            "-c".into(),
            format!("sleep {:.3}", job.seconds),
        ]);
    }
    if shape == Shape::Runner {
        spec.service_account_name = Some("default".into());
        spec.volumes = Some(vec![
            serde_json::from_value(json!({
                "name": "kube-api-access",
                "projected": { "defaultMode": 420, "sources": [
                    { "serviceAccountToken": { "expirationSeconds": 3607, "path": "token" } },
                    { "configMap": { "name": "kube-root-ca.crt", "items": [{ "key": "ca.crt", "path": "ca.crt" }] } },
                    { "downwardAPI": { "items": [{ "path": "namespace", "fieldRef": { "apiVersion": "v1", "fieldPath": "metadata.namespace" } }] } }
                ] }
            }))
            .expect("static volume literal"),
        ]);
        c.volume_mounts = Some(vec![
            serde_json::from_value(json!({
                "name": "kube-api-access",
                "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                "readOnly": true
            }))
            .expect("static mount literal"),
        ]);
    }
    pod
}

/// Create the Pod, wait for it to end, delete it and wait until it is gone.
async fn lifecycle(
    r: &Run<'_>,
    ns: &str,
    shape: Shape,
    progress: &mut Progress,
) -> anyhow::Result<Ending> {
    let api: Api<Pod> = Api::namespaced(r.admin.clone(), ns);
    let name = shape.name();
    progress.line(&format!("api: one {name} Pod in namespace {ns}"));
    api.create(&PostParams::default(), &pod(r, shape)).await?;
    let ending = crate::cluster::wait_for(r.deadline, || async {
        let p = api.get_opt(name).await.ok().flatten()?;
        match p.status?.phase?.as_str() {
            "Succeeded" => Some(Ending::Succeeded),
            "Failed" => Some(Ending::Failed),
            _ => None,
        }
    })
    .await
    .map_err(|e| anyhow::anyhow!("the {name} Pod did not end: {e}"))?;
    api.delete(name, &DeleteParams::default()).await?;
    crate::cluster::wait_for(r.deadline, || async {
        matches!(api.get_opt(name).await, Ok(None)).then_some(())
    })
    .await
    .map_err(|e| anyhow::anyhow!("the {name} Pod was not gone: {e}"))?;
    Ok(ending)
}
