//! Observation -> Pod status, built with k8s-openapi's types and sent as the body of a
//! strategic-merge patch on `pods/status`.
//!
//! Follows kubelet's `getPhase` and container-state conventions
//! (docs/reference/host-and-conventions.md §5.3) with one synthesized container whose `containerID`
//! is `tart://<vm>`. Only fields that exist in Kubernetes 1.20 are written. Condition transition
//! times are carried over from the current status while a condition's status is unchanged, so an
//! unchanged observation builds an identical patch and [`needs_patch`] says no: our own status
//! writes retrigger the watch, and this is what keeps that from looping. A `True` condition carries
//! no reason or message, as kubelet's; the patch deletes any left from when it was `False` (a
//! strategic merge keeps fields it is not told to remove). Pure; no I/O, time is passed in.

use k8s_openapi::{
    api::core::v1::{
        ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStateWaiting,
        ContainerStatus, PodCondition, PodIP, PodStatus,
    },
    apimachinery::pkg::apis::meta::v1::Time,
    jiff::Timestamp,
};
use serde_json::Value;

use super::{
    admission::RejectReason,
    events::DEADLINE_MESSAGE,
    reasons::{TerminatedReason, WaitingReason},
};
use crate::guest_contract::job::JobActivity;

/// A finished run of the VM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Terminated {
    /// Exit code (signals: 128 + signal, as container runtimes report).
    pub exit_code: i32,
    /// Why it ended.
    pub reason: TerminatedReason,
    /// What the user should know beyond the reason.
    pub message: Option<String>,
    /// When `tart run` started.
    pub started_at: Timestamp,
    /// When it ended.
    pub finished_at: Timestamp,
    /// The host ended the run (docs/pods.md, "When a VM dies"): the Pod gets
    /// `DisruptionTarget=True` with this reason and message once the run is its last.
    pub disruption: Option<Disruption>,
}

/// Why the host, not the job, ended a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Disruption {
    /// Kubelet-style word, e.g. `HostMemoryPressure`.
    pub reason: &'static str,
    pub message: String,
}

/// The condition a host-caused end sets, as kubelet's (1.26+) for Pods it disrupts.
pub(crate) const DISRUPTION_CONDITION: &str = "DisruptionTarget";

/// The one container's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ContainerView {
    /// Not running yet, or between runs.
    Waiting {
        /// Why.
        reason: WaitingReason,
        /// What the user should know beyond the reason.
        message: Option<String>,
    },
    /// `tart run` is alive.
    Running {
        /// Start of this run.
        started_at: Timestamp,
        /// Past its startup probe (always, without one): the container status's `started`.
        started: bool,
        /// Ready: started, the guest has an IP, and the readiness probe (if any) passes.
        ready: bool,
    },
    /// Exited for good.
    Terminated(Terminated),
}

impl ContainerView {
    /// Waiting for `reason`.
    pub(crate) fn waiting(reason: WaitingReason, message: Option<String>) -> Self {
        Self::Waiting { reason, message }
    }

    /// The waiting message, if waiting with one.
    pub(crate) fn waiting_message(&self) -> Option<&str> {
        match self {
            Self::Waiting { message, .. } => message.as_deref(),
            _ => None,
        }
    }

    /// The waiting reason, if waiting.
    pub(crate) fn waiting_reason(&self) -> Option<WaitingReason> {
        match self {
            Self::Waiting { reason, .. } => Some(*reason),
            _ => None,
        }
    }
}

/// What the agent knows about a Pod, in status terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Observation {
    /// The node's IP.
    pub host_ip: Option<String>,
    pub container: String,
    /// Image as in the spec.
    pub image: String,
    /// Image digest when known.
    pub image_id: Option<String>,
    /// VM name once cloned.
    pub vm: Option<String>,
    /// Current state.
    pub state: ContainerView,
    /// Previous run, after a restart.
    pub last_terminated: Option<Terminated>,
    /// Restarts so far.
    pub restart_count: u32,
    pub pod_ip: Option<String>,
    /// What the job says about itself, once it said anything.
    pub job: Option<JobActivity>,
    /// `spec.readinessGates`' condition types: `Ready` waits for each to be `True`.
    pub readiness_gates: Vec<String>,
}

/// Our own Pod condition: the job is busy (`True`) or not (`False`, reason `JobIdle` or
/// `JobEnded`). Unlike kubelet's, it carries its reason in both states.
pub(crate) const JOB_BUSY_CONDITION: &str = "tart.run/JobBusy";

/// What the Pod status should say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Desired {
    /// Rejected at admission: phase Failed with reason and message, nothing else.
    Rejected {
        /// Why.
        reason: RejectReason,
        /// `status.message`.
        message: String,
    },
    /// The normal case.
    Observed(Box<Observation>),
    /// `activeDeadlineSeconds` passed: phase Failed, reason `DeadlineExceeded`, with the
    /// container's last observed state.
    DeadlineExceeded(Box<Observation>),
}

impl From<Observation> for Desired {
    fn from(o: Observation) -> Self {
        Desired::Observed(Box::new(o))
    }
}

/// The Pod phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Not started yet.
    Pending,
    /// Started (or restarting).
    Running,
    /// Ended with exit 0 for good.
    Succeeded,
    /// Ended otherwise for good, or rejected.
    Failed,
}

impl Phase {
    /// The phase as Kubernetes shows it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "Pending",
            Self::Running => "Running",
            Self::Succeeded => "Succeeded",
            Self::Failed => "Failed",
        }
    }

    fn is_terminal(self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed)
    }
}

/// The phase, per kubelet's rules for a single container.
pub(crate) fn phase(o: &Observation) -> Phase {
    match &o.state {
        ContainerView::Running { .. } => Phase::Running,
        ContainerView::Terminated(t) if t.exit_code == 0 => Phase::Succeeded,
        ContainerView::Terminated(_) => Phase::Failed,
        // A waiting container that ran before is restarting: kubelet counts it as stopped and
        // keeps the Pod Running.
        ContainerView::Waiting { .. } if o.last_terminated.is_some() => Phase::Running,
        ContainerView::Waiting { .. } => Phase::Pending,
    }
}

fn time(t: Timestamp) -> Time {
    // k8s-openapi writes `Time` with seconds precision: keep ours the same, so what we build
    // compares equal to what the server returns.
    Time(Timestamp::from_second(t.as_second()).unwrap_or(t))
}

fn terminated_state(t: &Terminated) -> ContainerStateTerminated {
    ContainerStateTerminated {
        exit_code: t.exit_code,
        reason: Some(t.reason.as_str().into()),
        message: t.message.clone(),
        started_at: Some(time(t.started_at)),
        finished_at: Some(time(t.finished_at)),
        ..ContainerStateTerminated::default()
    }
}

fn container_state(v: &ContainerView) -> ContainerState {
    match v {
        ContainerView::Waiting { reason, message } => ContainerState {
            waiting: Some(ContainerStateWaiting {
                reason: Some(reason.as_str().into()),
                message: message.clone(),
            }),
            ..ContainerState::default()
        },
        ContainerView::Running { started_at, .. } => ContainerState {
            running: Some(ContainerStateRunning {
                started_at: Some(time(*started_at)),
            }),
            ..ContainerState::default()
        },
        ContainerView::Terminated(t) => ContainerState {
            terminated: Some(terminated_state(t)),
            ..ContainerState::default()
        },
    }
}

/// One condition; its transition time is carried over while its status is unchanged.
fn condition(
    current: Option<&PodStatus>,
    type_: &str,
    ok: bool,
    not_ok: Option<(&str, String)>,
    now: Timestamp,
) -> PodCondition {
    let status = if ok { "True" } else { "False" };
    let prev = current
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == type_));
    let since = match prev {
        Some(c) if c.status == status => c.last_transition_time.clone(),
        _ => None,
    };
    let (reason, message) = match not_ok.filter(|_| !ok) {
        Some((r, m)) => (Some(r.to_owned()), Some(m)),
        None => (None, None),
    };
    PodCondition {
        type_: type_.into(),
        status: status.into(),
        last_transition_time: Some(since.unwrap_or_else(|| time(now))),
        reason,
        message,
        ..PodCondition::default()
    }
}

/// The desired status. `current` supplies transition times and `startTime`.
pub(crate) fn desired_status(
    desired: &Desired,
    current: Option<&PodStatus>,
    now: Timestamp,
) -> PodStatus {
    let o = match desired {
        Desired::Rejected { reason, message } => {
            return PodStatus {
                phase: Some(Phase::Failed.as_str().into()),
                reason: Some(reason.pod_reason().into()),
                message: Some(message.clone()),
                ..PodStatus::default()
            };
        }
        Desired::Observed(o) => o,
        Desired::DeadlineExceeded(o) => {
            return PodStatus {
                phase: Some(Phase::Failed.as_str().into()),
                reason: Some("DeadlineExceeded".into()),
                message: Some(DEADLINE_MESSAGE.into()),
                ..observed_status(o, current, now)
            };
        }
    };
    observed_status(o, current, now)
}

fn observed_status(o: &Observation, current: Option<&PodStatus>, now: Timestamp) -> PodStatus {
    let ready = matches!(o.state, ContainerView::Running { ready: true, .. });
    let phase = phase(o);
    let not_ready = if phase.is_terminal() {
        ("PodCompleted", String::new())
    } else {
        (
            "ContainersNotReady",
            format!("containers with unready status: [{}]", o.container),
        )
    };
    let not_ready = || Some((not_ready.0, not_ready.1.clone()));
    let container = ContainerStatus {
        name: o.container.clone(),
        image: o.image.clone(),
        image_id: o.image_id.clone().unwrap_or_default(),
        container_id: o.vm.as_ref().map(|vm| format!("tart://{vm}")),
        ready,
        started: Some(matches!(
            o.state,
            ContainerView::Running { started: true, .. }
        )),
        restart_count: i32::try_from(o.restart_count).unwrap_or(i32::MAX),
        state: Some(container_state(&o.state)),
        last_state: o.last_terminated.as_ref().map(|t| ContainerState {
            terminated: Some(terminated_state(t)),
            ..ContainerState::default()
        }),
        ..ContainerStatus::default()
    };
    let start = current
        .and_then(|s| s.start_time.clone())
        .unwrap_or_else(|| time(now));
    // Kubelet's `Ready`: the containers first, then every readiness gate.
    let gates = ready
        .then(|| unready_gates(&o.readiness_gates, current))
        .flatten();
    let pod_ready = ready && gates.is_none();
    let pod_not_ready = match gates {
        Some(m) => Some((READINESS_GATES_NOT_READY, m)),
        None => not_ready(),
    };
    let mut conditions = vec![
        condition(current, "PodScheduled", true, None, now),
        condition(current, "Initialized", true, None, now),
        condition(current, "ContainersReady", ready, not_ready(), now),
        condition(current, "Ready", pod_ready, pod_not_ready, now),
    ];
    if let Some(job) = o.job {
        conditions.push(job_condition(current, job, now));
    }
    if let ContainerView::Terminated(Terminated {
        disruption: Some(d),
        ..
    }) = &o.state
    {
        conditions.push(PodCondition {
            reason: Some(d.reason.into()),
            message: Some(d.message.clone()),
            ..condition(current, DISRUPTION_CONDITION, true, None, now)
        });
    }
    PodStatus {
        phase: Some(phase.as_str().into()),
        start_time: Some(start),
        conditions: Some(conditions),
        container_statuses: Some(vec![container]),
        host_ip: o.host_ip.clone(),
        pod_ip: o.pod_ip.clone(),
        pod_ips: o.pod_ip.clone().map(|ip| vec![PodIP { ip }]),
        ..PodStatus::default()
    }
}

/// Kubelet's reason for `Ready=False` while the containers are ready but a readiness gate is
/// not.
pub(crate) const READINESS_GATES_NOT_READY: &str = "ReadinessGatesNotReady";

/// Kubelet's message naming each readiness gate whose condition is absent or not `True` in
/// `current`; `None` when every gate is `True`.
pub(crate) fn unready_gates(gates: &[String], current: Option<&PodStatus>) -> Option<String> {
    let conditions = current
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or_default();
    let unready: Vec<String> = gates
        .iter()
        .filter_map(|g| match conditions.iter().find(|c| c.type_ == *g) {
            None => Some(format!(
                "corresponding condition of pod readiness gate {g:?} does not exist."
            )),
            Some(c) if c.status != "True" => Some(format!(
                "the status of pod readiness gate {g:?} is not \"True\", but {}",
                c.status
            )),
            Some(_) => None,
        })
        .collect();
    (!unready.is_empty()).then(|| unready.join(", "))
}

fn job_condition(current: Option<&PodStatus>, job: JobActivity, now: Timestamp) -> PodCondition {
    let (busy, reason) = job.condition();
    let message = match job {
        JobActivity::Busy => "the job marked itself busy",
        JobActivity::Idle => "the job is not busy",
        JobActivity::Ended => "the job has ended",
    };
    PodCondition {
        reason: Some(reason.into()),
        message: Some(message.into()),
        ..condition(current, JOB_BUSY_CONDITION, busy, None, now)
    }
}

/// The patch body for `status`: the status as JSON, with explicit `null`s that delete the
/// reason and message a `True` condition may still carry on the server.
pub(crate) fn patch_body(status: &PodStatus) -> Value {
    let mut v = serde_json::to_value(status).unwrap_or(Value::Null);
    if let Some(conds) = v.get_mut("conditions").and_then(Value::as_array_mut) {
        for c in conds {
            let own = c["type"] == JOB_BUSY_CONDITION || c["type"] == DISRUPTION_CONDITION;
            if c["status"] == "True" && !own {
                c["reason"] = Value::Null;
                c["message"] = Value::Null;
            }
        }
    }
    v
}

/// The body of the status patch for `desired` (see [`desired_status`], [`patch_body`]).
pub(crate) fn build(desired: &Desired, current: Option<&PodStatus>, now: Timestamp) -> Value {
    patch_body(&desired_status(desired, current, now))
}

/// Whether `desired` says anything `current` does not already say. Only keys present in
/// `desired` are compared, so fields the API server defaults never cause a patch loop.
pub(crate) fn needs_patch(desired: &Value, current: Option<&PodStatus>) -> bool {
    let current = current
        .and_then(|c| serde_json::to_value(c).ok())
        .unwrap_or(Value::Null);
    !subset(desired, &current)
}

fn subset(want: &Value, have: &Value) -> bool {
    match (want, have) {
        (Value::Object(w), Value::Object(h)) => w.iter().all(|(k, v)| {
            h.get(k).is_some_and(|hv| subset(v, hv)) || (v.is_null() && !h.contains_key(k))
        }),
        // Conditions merge by `type` (strategic merge): match them by type, in any order.
        (Value::Array(w), Value::Array(h)) if w.iter().all(|x| x.get("type").is_some()) => {
            w.iter().all(|x| {
                h.iter()
                    .find(|y| y.get("type") == x.get("type"))
                    .is_some_and(|y| subset(x, y))
            })
        }
        (Value::Array(w), Value::Array(h)) => {
            w.len() == h.len() && w.iter().zip(h).all(|(a, b)| subset(a, b))
        }
        (w, h) => w == h,
    }
}

#[cfg(test)]
mod tests;
