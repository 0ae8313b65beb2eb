//! Test fixtures: probe specs with kubelet's defaults, changed by chaining
//! (`spec(ProbeKind::Liveness).failures(2).period(5)`), and sets of them.

use std::time::Duration;

use super::model::{Action, ProbeKind, ProbeSet, ProbeSpec};

/// An `exec true` probe with the API server's defaults.
pub(crate) fn spec(kind: ProbeKind) -> ProbeSpec {
    ProbeSpec {
        kind,
        action: Action::Exec {
            command: vec![kind.as_str().to_owned()],
        },
        initial_delay: Duration::ZERO,
        period: Duration::from_secs(10),
        timeout: Duration::from_secs(1),
        success_threshold: 1,
        failure_threshold: 3,
        termination_grace: None,
    }
}

/// Chainable changes to a spec.
pub(crate) trait SpecExt {
    fn successes(self, n: u32) -> Self;
    fn failures(self, n: u32) -> Self;
    fn initial(self, secs: u64) -> Self;
    fn period(self, secs: u64) -> Self;
    fn grace(self, secs: u64) -> Self;
}

impl SpecExt for ProbeSpec {
    fn successes(self, n: u32) -> Self {
        Self {
            success_threshold: n,
            ..self
        }
    }
    fn failures(self, n: u32) -> Self {
        Self {
            failure_threshold: n,
            ..self
        }
    }
    fn initial(self, secs: u64) -> Self {
        Self {
            initial_delay: Duration::from_secs(secs),
            ..self
        }
    }
    fn period(self, secs: u64) -> Self {
        Self {
            period: Duration::from_secs(secs),
            ..self
        }
    }
    fn grace(self, secs: u64) -> Self {
        Self {
            termination_grace: Some(Duration::from_secs(secs)),
            ..self
        }
    }
}

/// The container `vm` with these probes (at most one of each kind).
pub(crate) fn set(specs: impl IntoIterator<Item = ProbeSpec>) -> ProbeSet {
    let mut set = ProbeSet {
        container: "vm".into(),
        ..Default::default()
    };
    for s in specs {
        match s.kind {
            ProbeKind::Startup => set.startup = Some(s),
            ProbeKind::Readiness => set.readiness = Some(s),
            ProbeKind::Liveness => set.liveness = Some(s),
        }
    }
    set
}
