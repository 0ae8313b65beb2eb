//! The worker's side of probes: a prober per run once the guest has an IP, its verdicts turned
//! into the container's `started`/`ready`, and a failed liveness or startup probe into a stop of
//! the VM that the plan then restarts per `restartPolicy` (kubelet's rule: any policy but
//! `Never` restarts a container it killed for a probe). The probe engine itself is
//! [`crate::lifecycle::probes`].

use std::sync::{
    Arc,
    atomic::{AtomicU32, Ordering},
};

use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use tart::Tart;
use tokio::time::Instant;
use tracing::{info, warn};

use super::{Worker, WorkerInput};
use crate::kubelet_api::scrape::probes::{ProbeResult, ProbeType, ProbedContainer};
use crate::lifecycle::probes::{
    self, GuestChecker, Kill, Outcome, ProbeKind, ProbeReport, ProbeSet, ProbeStatus,
};
use crate::pods::{
    ending::AgentStop,
    events::Occurrence,
    metrics::{PodMetrics, ProbeLabels},
    sink::EventSink,
    status::ContainerView,
};

/// The probes of the Pod's container; none when it has none, or when they cannot be read
/// (admission refuses such a Pod, so this only guards an update made after admission).
pub(super) fn probe_set(pod: &Pod) -> Option<ProbeSet> {
    let c = pod.spec.as_ref()?.containers.first()?;
    match ProbeSet::from_container(c) {
        Ok(set) if !set.is_empty() => Some(set),
        Ok(_) => None,
        Err(error) => {
            warn!(%error, "the container's probes cannot be run");
            None
        }
    }
}

/// kubelet's `probe_type` of a probe.
fn prober_type(kind: ProbeKind) -> ProbeType {
    match kind {
        ProbeKind::Startup => ProbeType::Startup,
        ProbeKind::Readiness => ProbeType::Readiness,
        ProbeKind::Liveness => ProbeType::Liveness,
    }
}

/// kubelet's `prober_probe_total` result of an attempt: a warning is a success, and an
/// attempt that errored (no verdict) is not counted, as kubelet throws such a result away.
fn prober_result(outcome: &Outcome) -> Option<ProbeResult> {
    match outcome {
        Outcome::Success | Outcome::Warning(_) => Some(ProbeResult::Successful),
        Outcome::Failure(_) => Some(ProbeResult::Failed),
        Outcome::Error(_) => None,
    }
}

/// Probe attempts become `probe_results_total`, kubelet's `prober_probe_total` and, when they
/// fail or error, `Unhealthy` events (one per attempt, as kubelet records them).
struct Report {
    events: EventSink,
    metrics: PodMetrics,
    uid: String,
    /// The container, as `prober_probe_total` labels it.
    container: ProbedContainer,
    obj: ObjectReference,
    /// Numbers the `Unhealthy` events of every run of the Pod (the sink dedupes on it).
    seq: Arc<AtomicU32>,
}

impl ProbeReport for Report {
    fn attempt(&self, kind: ProbeKind, outcome: &Outcome) {
        self.metrics
            .probe_results
            .get_or_create(&ProbeLabels {
                probe: kind.as_str(),
                result: outcome.result().as_str(),
            })
            .inc();
        if let Some(result) = prober_result(outcome) {
            self.metrics
                .prober
                .count(&self.container, prober_type(kind), result);
        }
        let (Some(reason), Some(message)) = (
            probes::event_reason(outcome),
            probes::event_message(kind, outcome),
        ) else {
            return;
        };
        let n = self.seq.fetch_add(1, Ordering::Relaxed);
        let occ = Occurrence::Probe { reason, message };
        self.events.emit(&self.uid, &self.obj, n, occ);
    }
}

impl<T: Tart> Worker<T> {
    /// Whether a run of this Pod counts as started as soon as it runs: it has no startup probe.
    pub(super) fn starts_unprobed(input: &WorkerInput) -> bool {
        probe_set(&input.pod.0).is_none_or(|s| s.startup.is_none())
    }

    /// The guest has an IP: start probing it, or, without probes, call it ready.
    pub(super) fn start_probing(&mut self, input: &WorkerInput) {
        let (Some(set), Some(ip)) = (probe_set(&input.pod.0), self.state.pod_ip) else {
            self.stop_probing();
            self.set_probe_status(ProbeStatus {
                started: true,
                ready: true,
            });
            return;
        };
        let mut set = set;
        if matches!(
            self.state.view,
            ContainerView::Running { started: true, .. }
        ) {
            // Started already: a run adopted after an agent restart, which kubelet treats as
            // past its startup probe, so it is not run again.
            set.startup = None;
        }
        let status = ProbeStatus::initial(&set);
        let checker = GuestChecker::new(self.ctx.tart.clone(), self.state.vm.clone(), ip);
        let report = Report {
            events: self.ctx.events.clone(),
            metrics: self.ctx.metrics.clone(),
            uid: input.uid.clone(),
            container: ProbedContainer {
                namespace: input.obj.namespace.clone().unwrap_or_default(),
                pod: input.obj.name.clone().unwrap_or_default(),
                pod_uid: input.uid.clone(),
                container: input
                    .pod
                    .0
                    .spec
                    .as_ref()
                    .and_then(|s| s.containers.first())
                    .map(|c| c.name.clone())
                    .unwrap_or_default(),
            },
            obj: input.obj.clone(),
            seq: self.unhealthy_seq.clone(),
        };
        let started = self.run_started().map_or_else(Instant::now, |(i, _)| i);
        if let Some(run) = &mut self.run {
            run.prober = Some(probes::spawn(set, checker, report, started));
        }
        self.set_probe_status(status);
    }

    /// The prober's latest verdict, if it changed.
    pub(super) fn probe_changed(&mut self) {
        let prober = self.run.as_mut().and_then(|r| r.prober.as_mut());
        if let Some(s) = prober.map(|p| *p.status.borrow_and_update()) {
            self.set_probe_status(s);
        }
    }

    /// The prober's verdict on `started` and `ready`.
    pub(super) fn set_probe_status(&mut self, s: ProbeStatus) {
        if let ContainerView::Running { started, ready, .. } = &mut self.state.view {
            *started = s.started;
            *ready = s.started && s.ready;
        }
    }

    /// A liveness or startup probe failed: stop the VM within the probe's (or the Pod's) grace
    /// period; the exit is reported as the agent's doing (the signal the job got, `Error`), and
    /// the plan restarts it per `restartPolicy`.
    pub(super) async fn probe_kill(&mut self, input: &WorkerInput, kill: Kill) {
        self.stop_probing();
        let Some(proc) = self.proc() else {
            return;
        };
        let restarts = input.facts.restart_policy.restarts_after_agent_kill();
        info!(probe = kill.kind.as_str(), message = %kill.message, "probe failed; stopping the vm");
        let occ = Occurrence::ProbeKilling {
            message: kill.event_message(restarts),
        };
        self.emit(input, self.state.facts.restarts, occ);
        self.state.facts.agent_killed = true;
        let grace = kill.grace.unwrap_or(input.grace);
        let why = match kill.kind {
            ProbeKind::Startup => AgentStop::Startup,
            ProbeKind::Liveness | ProbeKind::Readiness => AgentStop::Liveness,
        };
        self.kill_run(proc, why, "a failed probe", grace).await;
    }
}
