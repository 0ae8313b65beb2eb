//! Observation -> Pod status (the body of a strategic-merge patch on `pods/status`).
//!
//! Follows kubelet's `getPhase` and container-state conventions (host-and-conventions.md §5.3)
//! with one synthesized container whose `containerID` is `tart://<vm>`. Only fields that exist in
//! Kubernetes 1.20 are written. Condition transition times are carried over from the current
//! status while a condition's status is unchanged, so an unchanged observation builds an
//! identical patch and [`needs_patch`] says no: our own status writes retrigger the watch, and
//! this is what keeps that from looping. Pure; no I/O, time is passed in.

use k8s_openapi::{api::core::v1::PodStatus, jiff::Timestamp};
use serde_json::{Map, Value, json};

/// A finished run of the VM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Terminated {
    /// Exit code (signals: 128 + signal, as container runtimes report).
    pub exit_code: i32,
    /// `Completed` (0) or `Error`.
    pub reason: String,
    /// Optional detail.
    pub message: Option<String>,
    /// When `tart run` started.
    pub started_at: Timestamp,
    /// When it ended.
    pub finished_at: Timestamp,
}

impl Terminated {
    /// `Completed` for exit 0, `Error` otherwise (containerd's reasons).
    pub fn reason_for(code: i32) -> &'static str {
        if code == 0 { "Completed" } else { "Error" }
    }
}

/// The one container's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContainerView {
    /// Not running: `ContainerCreating`, `ErrImagePull`, `ImagePullBackOff`,
    /// `ErrImageNeverPull`, `CrashLoopBackOff`, or a host-fault reason.
    Waiting {
        /// Reason.
        reason: String,
        /// Message.
        message: Option<String>,
    },
    /// `tart run` is alive.
    Running {
        /// Start of this run.
        started_at: Timestamp,
        /// The guest has an IP.
        ready: bool,
    },
    /// Exited for good.
    Terminated(Terminated),
}

/// What the agent knows about a Pod, in status terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observation {
    /// The node's IP.
    pub host_ip: Option<String>,
    /// Container name.
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
    /// Guest IP.
    pub pod_ip: Option<String>,
}

/// What the Pod status should say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Desired {
    /// Rejected at admission: phase Failed with reason and message, nothing else.
    Rejected {
        /// `status.reason`.
        reason: String,
        /// `status.message`.
        message: String,
    },
    /// The normal case.
    Observed(Box<Observation>),
}

impl From<Observation> for Desired {
    fn from(o: Observation) -> Self {
        Desired::Observed(Box::new(o))
    }
}

fn ts(t: &Timestamp) -> String {
    // Same format as k8s-openapi's `Time` (seconds precision), so round trips compare equal.
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn terminated_json(t: &Terminated) -> Value {
    let mut v = json!({
        "exitCode": t.exit_code,
        "reason": t.reason,
        "startedAt": ts(&t.started_at),
        "finishedAt": ts(&t.finished_at),
    });
    if let Some(m) = &t.message {
        v["message"] = json!(m);
    }
    v
}

/// The phase, per kubelet's rules for a single container.
pub fn phase(o: &Observation) -> &'static str {
    match &o.state {
        ContainerView::Running { .. } => "Running",
        ContainerView::Terminated(t) if t.exit_code == 0 => "Succeeded",
        ContainerView::Terminated(_) => "Failed",
        // A waiting container that ran before is restarting: kubelet counts it as stopped and
        // keeps the Pod Running.
        ContainerView::Waiting { .. } if o.last_terminated.is_some() => "Running",
        ContainerView::Waiting { .. } => "Pending",
    }
}

/// Build the `status` object. `current` supplies transition times and `startTime`.
pub fn build(desired: &Desired, current: Option<&PodStatus>, now: Timestamp) -> Value {
    let o = match desired {
        Desired::Rejected { reason, message } => {
            return json!({ "phase": "Failed", "reason": reason, "message": message });
        }
        Desired::Observed(o) => o,
    };
    let ready = matches!(o.state, ContainerView::Running { ready: true, .. });
    let phase = phase(o);
    let terminal = matches!(phase, "Succeeded" | "Failed");
    let cond = |ty: &str, ok: bool, reason: Option<&str>| {
        let status = if ok { "True" } else { "False" };
        let prev = current
            .and_then(|s| s.conditions.as_ref())
            .and_then(|cs| cs.iter().find(|c| c.type_ == ty));
        let since = match prev {
            Some(c) if c.status == status => c
                .last_transition_time
                .as_ref()
                .map(|t| ts(&t.0))
                .unwrap_or_else(|| ts(&now)),
            _ => ts(&now),
        };
        let mut c = json!({ "type": ty, "status": status, "lastTransitionTime": since });
        if let Some(r) = reason.filter(|_| !ok) {
            c["reason"] = json!(r);
        }
        c
    };
    let not_ready = if terminal {
        "PodCompleted"
    } else {
        "ContainersNotReady"
    };
    let state = match &o.state {
        ContainerView::Waiting { reason, message } => {
            let mut w = json!({ "reason": reason });
            if let Some(m) = message {
                w["message"] = json!(m);
            }
            json!({ "waiting": w })
        }
        ContainerView::Running { started_at, .. } => {
            json!({ "running": { "startedAt": ts(started_at) } })
        }
        ContainerView::Terminated(t) => json!({ "terminated": terminated_json(t) }),
    };
    let mut cs = json!({
        "name": o.container,
        "image": o.image,
        "imageID": o.image_id.clone().unwrap_or_default(),
        "ready": ready,
        "started": matches!(o.state, ContainerView::Running { .. }),
        "restartCount": o.restart_count,
        "state": state,
    });
    if let Some(vm) = &o.vm {
        cs["containerID"] = json!(format!("tart://{vm}"));
    }
    if let Some(t) = &o.last_terminated {
        cs["lastState"] = json!({ "terminated": terminated_json(t) });
    }
    let start = current
        .and_then(|s| s.start_time.as_ref())
        .map(|t| ts(&t.0))
        .unwrap_or_else(|| ts(&now));
    let mut s = Map::new();
    s.insert("phase".into(), json!(phase));
    s.insert("startTime".into(), json!(start));
    s.insert(
        "conditions".into(),
        json!([
            cond("PodScheduled", true, None),
            cond("Initialized", true, None),
            cond("ContainersReady", ready, Some(not_ready)),
            cond("Ready", ready, Some(not_ready)),
        ]),
    );
    s.insert("containerStatuses".into(), json!([cs]));
    if let Some(h) = &o.host_ip {
        s.insert("hostIP".into(), json!(h));
    }
    if let Some(ip) = &o.pod_ip {
        s.insert("podIP".into(), json!(ip));
        s.insert("podIPs".into(), json!([{ "ip": ip }]));
    }
    Value::Object(s)
}

/// Whether `desired` says anything `current` does not already say. Only keys present in
/// `desired` are compared, so fields the API server defaults never cause a patch loop.
pub fn needs_patch(desired: &Value, current: Option<&PodStatus>) -> bool {
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
