//! One reconcile of one Pod: decide, carry out the Pod half of the decision, keep the worker's
//! input current, keep the Pod status in step with the worker.
//!
//! Level-triggered and idempotent; never waits on tart (that is the worker's job), only on API
//! requests, each under a deadline. The status is compared with the server's before it is
//! patched, so the watch event our own patch causes ends in a no-op, and a status someone else
//! changed (the node lifecycle controller marking Pods not ready) is put right at once.

use std::{sync::Arc, time::Duration};

use k8s_openapi::{api::core::v1::Pod, jiff::Timestamp};
use kube::{
    Api, Resource, ResourceExt,
    api::{DeleteParams, Patch, PatchParams, Preconditions},
    runtime::controller::Action,
};
use serde_json::json;
use tart::{Tart, VmName};
use tokio::time::Instant;
use tracing::{Instrument, debug, field, info, info_span, warn};

use super::{
    admission::{Admitted, HostLimits, Rejection, admit},
    context::Shared,
    events::Occurrence,
    fields::ignored_fields,
    input::{FINALIZER, deadline_left, is_terminal, pod_facts, worker_input},
    metrics::{KindLabels, ReasonLabels},
    plan::{PodFacts, PodStep, plan},
    profile::ProfileWait,
    status::{self, Desired, Observation},
    worker::{self, Start, WorkerState},
};
use crate::config::VmProfile;
use crate::vm_name::NamingError;
use crate::{
    api::ApiErrorKind,
    backoff::REQUEUE,
    errors::error_chain,
    guest_contract::prepare::NodeAllocatable,
    metrics::{OutcomeLabels, count_api_error},
    node::fence::Fence,
};

/// A failed reconcile.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
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
    /// This agent does not hold its Node's Lease (fenced, or not renewed in time): it writes
    /// nothing, since a successor may run the Pod.
    #[error("not writing {what}: this agent does not hold its Node's Lease")]
    LeaseNotHeld {
        /// What was not written.
        what: &'static str,
    },
}

impl Error {
    /// Closed metric label.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Error::NoUid => "no_uid",
            Error::Api { source, .. } => ApiErrorKind::of(source).as_str(),
            Error::Timeout { .. } => ApiErrorKind::Timeout.as_str(),
            Error::Naming(_) => "naming",
            Error::LeaseNotHeld { .. } => "lease_not_held",
        }
    }

    /// 404 (already gone) or 409 (changed meanwhile): the write is moot or will be redone.
    fn is_moot(&self) -> bool {
        matches!(self, Error::Api { source, .. }
            if matches!(ApiErrorKind::of(source), ApiErrorKind::NotFound | ApiErrorKind::Conflict))
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
pub(crate) async fn reconcile<T: Tart>(
    pod: Arc<Pod>,
    ctx: Arc<Shared<T>>,
) -> Result<Action, Error> {
    let span = info_span!(
        "reconcile",
        pod.namespace = %pod.namespace().unwrap_or_default(),
        pod.name = %pod.name_any(),
        pod.uid = %pod.uid().unwrap_or_default(),
        vm = field::Empty,
    );
    let started = Instant::now();
    let res = reconcile_inner(&pod, &ctx).instrument(span).await;
    let m = &ctx.worker.metrics;
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
            Error::NoUid | Error::Naming(_) | Error::LeaseNotHeld { .. } => {}
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

/// Requeue with a per-Pod exponential backoff ([`REQUEUE`]).
pub(crate) fn error_policy<T: Tart>(pod: Arc<Pod>, err: &Error, ctx: Arc<Shared<T>>) -> Action {
    let n = pod
        .uid()
        .map(|u| ctx.with_api_failures(|f| f.get(&u).copied().unwrap_or(1)))
        .unwrap_or(1);
    let delay = REQUEUE.jittered(n.saturating_sub(1), rand::random::<f64>());
    warn!(error = %error_chain(err), pod = %pod.name_any(), retry_s = delay.as_secs(), "reconcile failed");
    Action::requeue(delay)
}

/// One Pod, as this reconcile sees it.
struct View<'a> {
    pod: &'a Arc<Pod>,
    uid: String,
    api: Api<Pod>,
    timeout: Duration,
    lease: &'a Fence,
}

impl View<'_> {
    /// [`call`], only while this agent holds its Node's Lease.
    async fn write<R>(
        &self,
        what: &'static str,
        f: impl std::future::Future<Output = Result<R, kube::Error>>,
    ) -> Result<R, Error> {
        if !self.lease.holds() {
            return Err(Error::LeaseNotHeld { what });
        }
        call(what, self.timeout, f).await
    }
}

async fn reconcile_inner<T: Tart>(pod: &Arc<Pod>, ctx: &Arc<Shared<T>>) -> Result<Action, Error> {
    let uid = pod.uid().ok_or(Error::NoUid)?;
    let v = View {
        api: Api::namespaced(ctx.client.clone(), &pod.namespace().unwrap_or_default()),
        timeout: ctx.cfg.api_timeout,
        lease: &ctx.lease,
        pod,
        uid,
    };
    // Decide.
    let node = *ctx.node.borrow();
    let worker = ctx.worker_state(&v.uid);
    let admission = admit(pod, &node.limits.unwrap_or(HostLimits::UNLIMITED));
    let now = Timestamp::now();
    let mut facts = pod_facts(pod, node.gone, ctx.cfg.without_finalizer, now);
    // Admission happens once, at first sight: a Pod that already has a VM is never rejected.
    if worker.is_none() {
        facts.rejection = admission.as_ref().err().cloned();
    }
    if worker.is_none() && admission.is_ok() {
        warn_ignored_fields(ctx, &v);
    }
    let vm_facts = worker.as_ref().map(|w| w.facts).unwrap_or_default();
    let decision = plan(&facts, &vm_facts, Instant::now());
    debug!(?decision, "pod decision");
    // The Pod step.
    if let Some(action) = pod_step(ctx, &v, decision.pod).await? {
        return Ok(action);
    }
    // The worker.
    let vm = ctx.naming.vm_name(&v.uid)?;
    tracing::Span::current().record("vm", field::display(&vm));
    let needs_worker = decision.vm != super::plan::VmStep::Idle;
    let profile = ctx.profile_for(pod);
    if let (None, true, Err(wait)) = (&worker, needs_worker && admission.is_ok(), &profile) {
        // No VM before its profile is known: the Pod waits, as kubelet's does for a sandbox it
        // cannot create; the RuntimeClass watch wakes it, or the next host check finds its
        // profile runnable again.
        wait_for_profile(ctx, &v, wait).await?;
        let again = match wait {
            ProfileWait::Unavailable { .. } => ctx.cfg.host_check_interval,
            _ => Duration::from_secs(300),
        };
        return Ok(Action::requeue(again));
    }
    let spawned = sync_worker(
        ctx,
        &v,
        &vm,
        admission.as_ref().ok(),
        facts,
        needs_worker,
        profile,
    );
    if spawned {
        // A task spawned here waits in this thread's next-task slot, which no other thread
        // takes, until this reconcile yields: yielding now starts the Pod's worker before the
        // status below is built and sent (docs/performance.md, "Agent overhead per Pod").
        tokio::task::yield_now().await;
    }
    // The status. A worker started now has its first state already (waiting
    // `ContainerCreating`, as kubelet shows a container before it exists): written at once, so
    // the Pod shows it while the image pulls rather than a bare `Pending`.
    let worker = worker.or_else(|| spawned.then(|| ctx.worker_state(&v.uid)).flatten());
    if let Some(ws) = worker.filter(|_| !is_terminal(pod)) {
        let d = Desired::from(observation(ctx, pod, &ws));
        patch_status(&v, &d).await?;
    }
    // Come back when the active deadline passes, if that is sooner than the resync.
    let resync = Duration::from_secs(300);
    let next = deadline_left(pod, now)
        .filter(|d| !d.is_zero() && !is_terminal(pod))
        .map_or(resync, |d| d.min(resync) + Duration::from_secs(1));
    Ok(Action::requeue(next))
}

/// A Warning naming the fields of an admitted Pod the agent does not honour (once per Pod: the
/// sink drops repeats).
fn warn_ignored_fields<T: Tart>(ctx: &Shared<T>, v: &View<'_>) {
    let fields = ignored_fields(v.pod);
    if fields.is_empty() {
        return;
    }
    info!(?fields, "pod fields ignored");
    let occ = Occurrence::IgnoredFields { fields };
    ctx.worker
        .events
        .emit(&v.uid, &v.pod.object_ref(&()), 0, occ);
}

/// Carry out the Pod step. `Some` ends the reconcile with that action.
async fn pod_step<T: Tart>(
    ctx: &Shared<T>,
    v: &View<'_>,
    step: PodStep,
) -> Result<Option<Action>, Error> {
    match step {
        PodStep::Sync => Ok(None),
        PodStep::AddFinalizer => {
            set_finalizer(v, true).await?;
            Ok(Some(Action::requeue(Duration::from_millis(50))))
        }
        PodStep::Reject(r) => {
            reject(ctx, v, r).await?;
            Ok(Some(Action::await_change()))
        }
        PodStep::RemoveFinalizer => {
            set_finalizer(v, false).await?;
            Ok(Some(Action::requeue(Duration::from_millis(50))))
        }
        PodStep::FailDeadline => {
            fail_deadline(ctx, v).await?;
            Ok(Some(Action::await_change()))
        }
        PodStep::DeletePod => {
            delete_pod(v).await?;
            ctx.with_workers(|w| w.remove(&v.uid));
            ctx.worker.events.forget(&v.uid);
            ctx.worker.metrics.prober.forget(&v.uid);
            Ok(Some(Action::await_change()))
        }
    }
}

/// Keep the worker's input current, or start the worker the decision needs. Returns whether
/// it started one.
fn sync_worker<T: Tart>(
    ctx: &Arc<Shared<T>>,
    v: &View<'_>,
    vm: &VmName,
    admitted: Option<&Admitted>,
    facts: PodFacts,
    needs_worker: bool,
    profile: Result<VmProfile, ProfileWait>,
) -> bool {
    let Some(a) = admitted else {
        // Not admissible now, but it has a worker (it was admitted before): facts only.
        ctx.with_workers(|w| {
            if let Some(h) = w.get(&v.uid) {
                h.input.send_if_modified(|i| {
                    let changed = i.facts != facts;
                    i.facts = facts;
                    changed
                });
            }
        });
        return false;
    };
    let mut input = worker_input(v.pod, a, facts, ctx.cfg.default_grace, profile);
    if let Some(l) = ctx.node.borrow().limits {
        input.alloc = NodeAllocatable {
            cpu_millis: l.cpu_millis,
            memory_bytes: l.memory_bytes,
            ephemeral_bytes: l.disk_bytes,
        };
    }
    let spawned = ctx.with_workers(|w| match w.get(&v.uid) {
        Some(h) => {
            h.input.send_if_modified(|i| {
                // A VM made with a profile keeps it when its RuntimeClass goes away.
                if i.profile.is_ok() && input.profile.is_err() {
                    input.profile = i.profile.clone();
                }
                let changed = *i != input;
                *i = input.clone();
                changed
            });
            false
        }
        None if needs_worker => {
            let h = worker::spawn(ctx.worker.clone(), vm.clone(), input, Start::Fresh, 0);
            w.insert(v.uid.clone(), h);
            true
        }
        None => false,
    });
    if spawned {
        info!(%vm, "provisioning started");
    }
    spawned
}

/// A Pod without a worker whose VM profile is not known now: a `FailedCreatePodSandBox`
/// Warning (once per reason: the sink drops repeats) and its container waiting in
/// `ContainerCreating` with the reason as message.
async fn wait_for_profile<T: Tart>(
    ctx: &Shared<T>,
    v: &View<'_>,
    wait: &ProfileWait,
) -> Result<(), Error> {
    let message = wait.message();
    let occ = Occurrence::SandboxFailed {
        message: message.clone(),
    };
    if ctx
        .worker
        .events
        .emit(&v.uid, &v.pod.object_ref(&()), 0, occ)
    {
        info!(%message, "pod waits for its VM profile");
    }
    let o = pending_observation(ctx, v.pod, Some(message));
    patch_status(v, &Desired::from(o)).await
}

async fn reject<T: Tart>(ctx: &Shared<T>, v: &View<'_>, r: Rejection) -> Result<(), Error> {
    let occ = Occurrence::Rejected {
        reason: r.reason,
        message: r.message.clone(),
    };
    if ctx
        .worker
        .events
        .emit(&v.uid, &v.pod.object_ref(&()), 0, occ)
    {
        info!(reason = r.reason.pod_reason(), message = %r.message, "pod rejected");
        let reason = r.reason.as_str();
        ctx.worker
            .metrics
            .rejections
            .get_or_create(&ReasonLabels { reason })
            .inc();
    }
    let d = Desired::Rejected {
        reason: r.reason,
        message: r.message,
    };
    patch_status(v, &d).await
}

/// Kubelet's active-deadline handling: a Normal `DeadlineExceeded` event and phase Failed with
/// reason `DeadlineExceeded`; the VM was stopped before this step.
async fn fail_deadline<T: Tart>(ctx: &Shared<T>, v: &View<'_>) -> Result<(), Error> {
    let obj = v.pod.object_ref(&());
    if ctx
        .worker
        .events
        .emit(&v.uid, &obj, 0, Occurrence::DeadlineExceeded)
    {
        info!("active deadline passed; pod failed");
    }
    let o = match ctx.worker_state(&v.uid) {
        Some(ws) => observation(ctx, v.pod, &ws),
        None => pending_observation(ctx, v.pod, None),
    };
    patch_status(v, &Desired::DeadlineExceeded(Box::new(o))).await
}

async fn delete_pod(v: &View<'_>) -> Result<(), Error> {
    let dp = DeleteParams {
        grace_period_seconds: Some(0),
        preconditions: Some(Preconditions {
            uid: Some(v.uid.clone()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    match v
        .write("delete pod", v.api.delete(&v.pod.name_any(), &dp))
        .await
    {
        Ok(_) => info!("pod deleted"),
        Err(e) if e.is_moot() => debug!("pod already gone"),
        Err(e) => return Err(e),
    }
    Ok(())
}

/// A Pod without a worker (no VM yet): its container waits in `ContainerCreating`, with
/// `message` if there is something to say.
fn pending_observation<T: Tart>(
    ctx: &Shared<T>,
    pod: &Pod,
    message: Option<String>,
) -> Observation {
    let c = pod.spec.as_ref().and_then(|s| s.containers.first());
    Observation {
        host_ip: Some(ctx.cfg.host_ip.clone()),
        container: c.map(|c| c.name.clone()).unwrap_or_default(),
        image: c.and_then(|c| c.image.clone()).unwrap_or_default(),
        image_id: None,
        vm: None,
        state: status::ContainerView::waiting(
            super::reasons::WaitingReason::ContainerCreating,
            message,
        ),
        last_terminated: None,
        restart_count: 0,
        pod_ip: None,
        job: None,
        readiness_gates: vec![],
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
        job: ws.job,
        readiness_gates: pod
            .spec
            .iter()
            .flat_map(|s| s.readiness_gates.iter().flatten())
            .map(|g| g.condition_type.clone())
            .collect(),
    }
}

async fn patch_status(v: &View<'_>, d: &Desired) -> Result<(), Error> {
    let current = v.pod.status.as_ref();
    let body = status::build(d, current, Timestamp::now());
    if !status::needs_patch(&body, current) {
        return Ok(());
    }
    let patch = Patch::Strategic(json!({ "status": body }));
    let name = v.pod.name_any();
    let pp = PatchParams::default();
    v.write("patch pod status", v.api.patch_status(&name, &pp, &patch))
        .await?;
    debug!(phase = %body["phase"], "status patched");
    Ok(())
}

/// Add or remove our finalizer. The resourceVersion makes it a compare-and-swap: a Pod that
/// changed meanwhile gives 409 and is reconciled again.
async fn set_finalizer(v: &View<'_>, add: bool) -> Result<(), Error> {
    let pod = v.pod;
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
    let pp = PatchParams::default();
    let r = v
        .write(
            "patch pod finalizers",
            v.api.patch(&pod.name_any(), &pp, &patch),
        )
        .await;
    match r {
        Ok(_) if add => info!("finalizer added"),
        Ok(_) => info!("finalizer removed"),
        Err(e) if !add && e.is_moot() => {}
        Err(e) => return Err(e),
    }
    Ok(())
}

#[cfg(test)]
mod tests;
