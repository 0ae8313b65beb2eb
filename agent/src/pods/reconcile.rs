//! One reconcile of one Pod: admission, finalizer, teardown hand-off, worker input, status.
//!
//! Level-triggered and idempotent; never waits on tart (that is the worker's job), only on API
//! requests, each under a deadline. The status is compared before it is patched, so the watch
//! event our own patch causes ends in a no-op.

use std::{sync::Arc, time::Duration};

use k8s_openapi::{
    api::core::v1::{ObjectReference, Pod},
    jiff::Timestamp,
};
use kube::{
    Api, Resource, ResourceExt,
    api::{DeleteParams, Patch, PatchParams, Preconditions},
    runtime::controller::Action,
};
use serde_json::json;
use tart::Tart;
use tracing::{Instrument, debug, field, info, info_span, warn};

use super::{
    admission::{Admitted, HostLimits, admit},
    context::{FINALIZER, Shared},
    events::Occurrence,
    image::PullPolicy,
    metrics::{KindLabels, OutcomeLabels, ReasonLabels},
    plan::{PodFacts, RestartPolicy, Step, plan},
    status::{self, Desired, Observation},
};
use crate::vm::{
    naming::NamingError,
    supervisor::{self, Start, WorkerInput, WorkerState},
};
use crate::{api::ApiErrorKind, backoff::REQUEUE, metrics::count_api_error};

/// Admission limits before our Node's allocatable is known: admit everything.
const UNLIMITED: HostLimits = HostLimits {
    cpu_millis: u64::MAX,
    memory_bytes: u64::MAX,
    disk_bytes: u64::MAX,
};

/// A failed reconcile.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The Pod has no UID (never true for Pods from the API server).
    #[error("pod has no metadata.uid")]
    NoUid,
    /// An API request failed.
    #[error("API request to {what} failed")]
    Api {
        /// What was requested.
        what: &'static str,
        /// The client error.
        #[source]
        source: kube::Error,
    },
    /// An API request passed its deadline.
    #[error("API request to {what} timed out")]
    Timeout {
        /// What was requested.
        what: &'static str,
    },
    /// The Pod UID cannot name a VM.
    #[error("cannot name the VM")]
    Naming(#[from] NamingError),
}

impl Error {
    /// Closed metric label.
    pub fn kind(&self) -> &'static str {
        match self {
            Error::NoUid => "no_uid",
            Error::Api { source, .. } => ApiErrorKind::of(source).as_str(),
            Error::Timeout { .. } => ApiErrorKind::Timeout.as_str(),
            Error::Naming(_) => "naming",
        }
    }
}

async fn call<R>(
    what: &'static str,
    timeout: Duration,
    f: impl std::future::Future<Output = Result<R, kube::Error>>,
) -> Result<R, Error> {
    match tokio::time::timeout(timeout, f).await {
        Ok(Ok(r)) => Ok(r),
        Ok(Err(source)) => Err(Error::Api { what, source }),
        Err(_) => Err(Error::Timeout { what }),
    }
}

/// The controller's reconcile function.
pub async fn reconcile<T: Tart>(pod: Arc<Pod>, ctx: Arc<Shared<T>>) -> Result<Action, Error> {
    let span = info_span!(
        "reconcile",
        pod.namespace = %pod.namespace().unwrap_or_default(),
        pod.name = %pod.name_any(),
        pod.uid = %pod.uid().unwrap_or_default(),
        vm = field::Empty,
    );
    let started = std::time::Instant::now();
    let res = reconcile_inner(&pod, &ctx).instrument(span).await;
    let m = &ctx.metrics;
    m.reconcile_duration
        .observe(started.elapsed().as_secs_f64());
    let outcome = if res.is_ok() { "ok" } else { "error" };
    m.reconciles.get_or_create(&OutcomeLabels { outcome }).inc();
    if let Err(e) = &res {
        m.reconcile_errors
            .get_or_create(&KindLabels { kind: e.kind() })
            .inc();
        match e {
            Error::Api { source, .. } => count_api_error(&ctx.api_errors, "pod", Some(source)),
            Error::Timeout { .. } => count_api_error(&ctx.api_errors, "pod", None),
            Error::NoUid | Error::Naming(_) => {}
        }
    }
    if let Some(uid) = pod.uid() {
        ctx.with_api_failures(|f| {
            if res.is_ok() {
                f.remove(&uid);
            } else {
                *f.entry(uid).or_default() += 1;
            }
        });
    }
    res
}

/// Requeue with a per-Pod exponential backoff (1 s doubling to 5 min, jittered).
pub fn error_policy<T: Tart>(pod: Arc<Pod>, err: &Error, ctx: Arc<Shared<T>>) -> Action {
    let n = pod
        .uid()
        .map(|u| ctx.with_api_failures(|f| f.get(&u).copied().unwrap_or(1)))
        .unwrap_or(1);
    let delay = REQUEUE.jittered(n.saturating_sub(1), rand::random::<f64>());
    warn!(error = %crate::telemetry::error_chain(err), pod = %pod.name_any(), retry_s = delay.as_secs(), "reconcile failed");
    Action::requeue(delay)
}

fn is_terminal(pod: &Pod) -> bool {
    matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    )
}

/// The worker input for an admitted Pod.
pub fn worker_input(
    pod: &Pod,
    a: &Admitted,
    facts: PodFacts,
    default_grace: Duration,
) -> WorkerInput {
    let spec = pod.spec.as_ref();
    let c = spec.and_then(|s| s.containers.first());
    let grace = pod
        .metadata
        .deletion_grace_period_seconds
        .or(spec.and_then(|s| s.termination_grace_period_seconds))
        .map(|s| Duration::from_secs(u64::try_from(s).unwrap_or(0)))
        .unwrap_or(default_grace);
    let uid = pod.uid().unwrap_or_default();
    WorkerInput {
        facts,
        obj: object_ref(pod),
        pod_label: format!(
            "{}_{}({uid})",
            pod.name_any(),
            pod.namespace().unwrap_or_default()
        ),
        uid,
        namespace: pod.namespace().unwrap_or_default(),
        container: a.container.clone(),
        image: a.image.clone(),
        pull_policy: PullPolicy::from_field(
            c.and_then(|c| c.image_pull_policy.as_deref()),
            &a.image,
        ),
        pull_secrets: spec
            .and_then(|s| s.image_pull_secrets.as_ref())
            .map(|v| v.iter().map(|r| r.name.clone()).collect())
            .unwrap_or_default(),
        resources: a.resources.to_vm(),
        created: pod.metadata.creation_timestamp.as_ref().map(|t| t.0),
        grace,
    }
}

fn object_ref(pod: &Pod) -> ObjectReference {
    pod.object_ref(&())
}

/// Pod facts for [`plan`].
pub fn pod_facts(pod: &Pod, node_gone: bool) -> PodFacts {
    PodFacts {
        deleting: pod.metadata.deletion_timestamp.is_some(),
        has_finalizer: pod.finalizers().iter().any(|f| f == FINALIZER),
        node_gone,
        terminal: is_terminal(pod),
        rejection: None,
        restart_policy: RestartPolicy::from_field(
            pod.spec.as_ref().and_then(|s| s.restart_policy.as_deref()),
        ),
    }
}

async fn reconcile_inner<T: Tart>(pod: &Pod, ctx: &Arc<Shared<T>>) -> Result<Action, Error> {
    let uid = pod.uid().ok_or(Error::NoUid)?;
    let ns = pod.namespace().unwrap_or_default();
    let name = pod.name_any();
    let t = ctx.cfg.api_timeout;
    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), &ns);
    let node = *ctx.node.borrow();
    let worker: Option<WorkerState> =
        ctx.with_workers(|w| w.get(&uid).map(|h| h.state.borrow().clone()));
    let admission = admit(pod, &node.limits.unwrap_or(UNLIMITED));
    let mut facts = pod_facts(pod, node.gone);
    // Admission happens once, at first sight: a Pod that already has a VM is never rejected.
    if worker.is_none() {
        facts.rejection = admission.as_ref().err().cloned();
    }
    let vm_facts = worker.as_ref().map(|w| w.facts).unwrap_or_default();
    let step = plan(&facts, &vm_facts, std::time::Instant::now());
    debug!(?step, "pod step");
    let obj = object_ref(pod);
    match step {
        Step::AddFinalizer => {
            set_finalizer(&api, pod, true, t).await?;
            return Ok(Action::requeue(Duration::from_millis(50)));
        }
        Step::Reject(r) => {
            let occ = Occurrence::Rejected {
                reason: r.reason.pod_reason().into(),
                message: r.message.clone(),
            };
            if ctx.events.emit(&uid, &obj, "rejected", occ) {
                info!(reason = r.reason.pod_reason(), message = %r.message, "pod rejected");
                ctx.metrics
                    .rejections
                    .get_or_create(&ReasonLabels {
                        reason: r.reason.as_str(),
                    })
                    .inc();
            }
            let d = Desired::Rejected {
                reason: r.reason.pod_reason().into(),
                message: r.message,
            };
            patch_status(&api, pod, &d, t).await?;
            return Ok(Action::await_change());
        }
        Step::RemoveFinalizer => {
            set_finalizer(&api, pod, false, t).await?;
            return Ok(Action::requeue(Duration::from_millis(50)));
        }
        Step::DeletePod => {
            let dp = DeleteParams {
                grace_period_seconds: Some(0),
                preconditions: Some(Preconditions {
                    uid: Some(uid.clone()),
                    resource_version: None,
                }),
                ..DeleteParams::default()
            };
            match api_ok_missing(call("delete pod", t, api.delete(&name, &dp)).await)? {
                true => info!("pod deleted"),
                false => debug!("pod already gone"),
            }
            ctx.with_workers(|w| w.remove(&uid));
            ctx.events.forget(&uid);
            return Ok(Action::await_change());
        }
        _ => {}
    }
    // VM steps, teardown and "nothing": the worker owns them; keep its input current.
    let vm = ctx.naming.vm_name(&uid)?;
    tracing::Span::current().record("vm", field::display(&vm));
    let has_worker = worker.is_some();
    if let Ok(a) = &admission {
        let input = worker_input(pod, a, facts.clone(), ctx.cfg.default_grace);
        let spawned = ctx.with_workers(|w| match w.get(&uid) {
            Some(h) => {
                h.input.send_if_modified(|i| {
                    let changed = *i != input;
                    *i = input.clone();
                    changed
                });
                false
            }
            None if needs_worker(&step) => {
                w.insert(
                    uid.clone(),
                    supervisor::spawn(ctx.clone(), vm.clone(), input.clone(), Start::Fresh, 0),
                );
                true
            }
            None => false,
        });
        if spawned {
            info!(%vm, "provisioning started");
        }
    } else if has_worker {
        ctx.with_workers(|w| {
            if let Some(h) = w.get(&uid) {
                h.input.send_if_modified(|i| {
                    let changed = i.facts != facts;
                    i.facts = facts.clone();
                    changed
                });
            }
        });
    }
    if let Some(ws) = worker.filter(|_| !is_terminal(pod)) {
        let d = Desired::from(observation(ctx, pod, &ws));
        patch_status(&api, pod, &d, t).await?;
    }
    Ok(Action::requeue(Duration::from_secs(300)))
}

fn needs_worker(step: &Step) -> bool {
    !matches!(step, Step::Nothing)
}

fn api_ok_missing<R>(r: Result<R, Error>) -> Result<bool, Error> {
    match r {
        Ok(_) => Ok(true),
        Err(Error::Api {
            source: kube::Error::Api(s),
            ..
        }) if s.code == 404 || s.code == 409 => Ok(false),
        Err(e) => Err(e),
    }
}

fn observation<T: Tart>(ctx: &Shared<T>, pod: &Pod, ws: &WorkerState) -> Observation {
    let c = pod.spec.as_ref().and_then(|s| s.containers.first());
    Observation {
        host_ip: Some(ctx.cfg.host_ip.clone()),
        container: c.map(|c| c.name.clone()).unwrap_or_default(),
        image: c.and_then(|c| c.image.clone()).unwrap_or_default(),
        image_id: ws.image_id.clone(),
        vm: Some(ws.vm.to_string()),
        state: ws.view.clone(),
        last_terminated: ws.last_terminated.clone(),
        restart_count: ws.facts.restarts,
        pod_ip: ws.pod_ip.map(|ip| ip.to_string()),
    }
}

async fn patch_status(api: &Api<Pod>, pod: &Pod, d: &Desired, t: Duration) -> Result<(), Error> {
    let current = pod.status.as_ref();
    let body = status::build(d, current, Timestamp::now());
    if !status::needs_patch(&body, current) {
        return Ok(());
    }
    let patch = Patch::Strategic(json!({ "status": body }));
    call(
        "patch pod status",
        t,
        api.patch_status(&pod.name_any(), &PatchParams::default(), &patch),
    )
    .await?;
    debug!(phase = %body["phase"], "status patched");
    Ok(())
}

/// Add or remove our finalizer. The resourceVersion makes it a compare-and-swap: a Pod that
/// changed meanwhile gives 409 and is reconciled again.
async fn set_finalizer(api: &Api<Pod>, pod: &Pod, add: bool, t: Duration) -> Result<(), Error> {
    let mut list: Vec<String> = pod
        .finalizers()
        .iter()
        .filter(|f| *f != FINALIZER)
        .cloned()
        .collect();
    if add {
        list.push(FINALIZER.into());
    }
    let patch = Patch::Merge(json!({
        "metadata": { "finalizers": list, "resourceVersion": pod.resource_version() }
    }));
    let r = call(
        "patch pod finalizers",
        t,
        api.patch(&pod.name_any(), &PatchParams::default(), &patch),
    )
    .await;
    if add {
        r?;
        info!("finalizer added");
    } else if api_ok_missing(r)? {
        info!("finalizer removed");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pods::{admission::admit, fixtures::test_pod};

    const HOST: HostLimits = UNLIMITED;

    fn input(pod: &Pod) -> WorkerInput {
        let a = admit(pod, &HOST).unwrap();
        worker_input(pod, &a, pod_facts(pod, false), Duration::from_secs(30))
    }

    #[test]
    fn grace_comes_from_the_deletion_then_the_spec_then_the_default() {
        assert_eq!(input(&test_pod().build()).grace, Duration::from_secs(30));
        let mut p = test_pod().build();
        p.spec.as_mut().unwrap().termination_grace_period_seconds = Some(45);
        assert_eq!(input(&p).grace, Duration::from_secs(45));
        let p = test_pod().deleting(20).build();
        assert_eq!(input(&p).grace, Duration::from_secs(20));
    }

    #[test]
    fn worker_input_carries_policy_secrets_resources_and_labels() {
        let p = test_pod()
            .image("ghcr.io/a/b:1")
            .pull_policy("Always")
            .pull_secret("regcred")
            .limit("cpu", "1500m")
            .restart_policy("Never")
            .build();
        let i = input(&p);
        assert_eq!(i.pull_policy, PullPolicy::Always);
        assert_eq!(i.pull_secrets, vec!["regcred".to_string()]);
        assert_eq!(i.resources.cpu, Some(2));
        assert_eq!(i.facts.restart_policy, RestartPolicy::Never);
        assert_eq!(
            i.pod_label,
            format!("runner_ci({})", crate::pods::fixtures::UID)
        );
        assert!(i.created.is_some());
    }

    #[test]
    fn pod_facts_see_finalizer_deletion_and_terminal_phase() {
        let f = pod_facts(&test_pod().build(), false);
        assert!(!f.has_finalizer && !f.deleting && !f.terminal);
        let f = pod_facts(
            &test_pod()
                .finalizer(FINALIZER)
                .deleting(5)
                .phase("Succeeded")
                .build(),
            true,
        );
        assert!(f.has_finalizer && f.deleting && f.terminal && f.node_gone);
    }

    #[test]
    fn api_error_kinds_are_closed_labels() {
        let api = |code| Error::Api {
            what: "x",
            source: kube::Error::Api(
                kube::core::Status::failure("m", "r")
                    .with_code(code)
                    .boxed(),
            ),
        };
        assert_eq!(api(409).kind(), "conflict");
        assert_eq!(api(403).kind(), "forbidden");
        assert_eq!(api(500).kind(), "other");
        assert_eq!(Error::Timeout { what: "x" }.kind(), "timeout");
    }
}
