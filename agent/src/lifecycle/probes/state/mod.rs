//! The prober's decisions, pure: each probe's thresholds (kubelet's worker: a verdict flips
//! after that many consecutive results; an error counts neither way), the gating of readiness
//! and liveness by the startup probe, the container's `started`/`ready`, and when a failing
//! liveness or startup probe means a kill. Timing is the prober's.

use super::{
    super::handlers::outcome::ProbeResult,
    model::{ProbeKind, ProbeSet, ProbeSpec},
};

/// What the probes say about the container.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProbeStatus {
    /// The startup probe passed (or there is none): the container's `started`.
    pub started: bool,
    /// Started, and the readiness probe passes (or there is none), and no kill is under way.
    pub ready: bool,
}

impl ProbeStatus {
    /// Before any attempt: started unless a startup probe must pass first; ready only when
    /// started and there is no readiness probe.
    pub(crate) fn initial(set: &ProbeSet) -> Self {
        Probes::new(set).status()
    }
}

/// A probe's standing verdict (kubelet's `results.Result`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// No verdict yet (a startup probe before it reached a threshold).
    Unknown,
    /// Passing.
    Success,
    /// Failing.
    Failure,
}

/// One probe's counting.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Tracker {
    success_threshold: u32,
    failure_threshold: u32,
    verdict: Verdict,
    /// The last counted result and how many times in a row it came.
    last: Option<Verdict>,
    run: u32,
}

impl Tracker {
    /// kubelet's initial verdicts: readiness failing until it passes, liveness passing until
    /// it fails, startup unknown.
    fn new(spec: &ProbeSpec) -> Self {
        let verdict = match spec.kind {
            ProbeKind::Readiness => Verdict::Failure,
            ProbeKind::Liveness => Verdict::Success,
            ProbeKind::Startup => Verdict::Unknown,
        };
        Self {
            success_threshold: spec.success_threshold.max(1),
            failure_threshold: spec.failure_threshold.max(1),
            verdict,
            last: None,
            run: 0,
        }
    }

    /// Count one attempt. `Some` when a threshold was reached (the verdict is set, even when
    /// it stays the same).
    fn observe(&mut self, result: ProbeResult) -> Option<Verdict> {
        let (v, threshold) = match result {
            ProbeResult::Success => (Verdict::Success, self.success_threshold),
            ProbeResult::Failure => (Verdict::Failure, self.failure_threshold),
            ProbeResult::Error => return None,
        };
        if self.last == Some(v) {
            self.run = self.run.saturating_add(1);
        } else {
            self.last = Some(v);
            self.run = 1;
        }
        if self.run < threshold {
            return None;
        }
        self.verdict = v;
        Some(v)
    }
}

/// The three probes of one container, counted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Probes {
    trackers: [Option<Tracker>; 3],
    /// A kill was decided: nothing runs any more.
    halted: bool,
}

impl Probes {
    /// Every probe at its initial verdict.
    pub(crate) fn new(set: &ProbeSet) -> Self {
        Self {
            trackers: ProbeKind::ALL.map(|k| set.get(k).map(Tracker::new)),
            halted: false,
        }
    }

    fn tracker(&self, kind: ProbeKind) -> Option<&Tracker> {
        self.trackers[kind.index()].as_ref()
    }

    fn verdict(&self, kind: ProbeKind) -> Option<Verdict> {
        self.tracker(kind).map(|t| t.verdict)
    }

    /// The container's standing.
    pub(crate) fn status(&self) -> ProbeStatus {
        let started = self
            .verdict(ProbeKind::Startup)
            .is_none_or(|v| v == Verdict::Success);
        let readiness = self
            .verdict(ProbeKind::Readiness)
            .is_none_or(|v| v == Verdict::Success);
        ProbeStatus {
            started,
            ready: started && readiness && !self.halted,
        }
    }

    /// Whether `kind` is probed now: startup until it passes, the others once started; none
    /// after a kill.
    pub(crate) fn runs(&self, kind: ProbeKind) -> bool {
        if self.halted || self.tracker(kind).is_none() {
            return false;
        }
        let started = self.status().started;
        match kind {
            ProbeKind::Startup => !started,
            ProbeKind::Readiness | ProbeKind::Liveness => started,
        }
    }

    /// Whether a kill was decided.
    #[cfg(test)]
    pub(crate) fn halted(&self) -> bool {
        self.halted
    }

    /// Count one attempt of `kind`. `Some(kind)` when it means a kill: liveness or startup
    /// reached its failure threshold. An attempt of a probe that does not run is ignored.
    pub(crate) fn observe(&mut self, kind: ProbeKind, result: ProbeResult) -> Option<ProbeKind> {
        if !self.runs(kind) {
            return None;
        }
        let tracker = self.trackers[kind.index()].as_mut()?;
        let verdict = tracker.observe(result)?;
        let kills = matches!(kind, ProbeKind::Liveness | ProbeKind::Startup);
        if kills && verdict == Verdict::Failure {
            self.halted = true;
            return Some(kind);
        }
        None
    }
}

#[cfg(test)]
mod tests;
