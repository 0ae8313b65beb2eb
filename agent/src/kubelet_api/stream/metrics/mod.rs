//! Exec session metrics (prefix `tart_kubelet_`): how sessions end, how long they take from
//! the request reaching the agent to the status written on the error stream, and how much of
//! that is the agent's own setup (request to `tart exec` spawned).

use prometheus_client::{
    metrics::{counter::Counter, family::Family, histogram::Histogram},
    registry::Registry,
};
use tokio::time::Instant;

use crate::metrics::{OutcomeLabels, register};

/// Buckets from a millisecond (setup) to an hour (an interactive shell).
pub(crate) const SESSION_BUCKETS: [f64; 16] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0, 60.0, 300.0, 900.0,
    3600.0,
];

/// How an exec session ended (`outcome` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum SessionOutcome {
    /// The command exited 0.
    Ok,
    /// The command exited with another code.
    NonzeroExit,
    /// The command could not be started or waited for, or the upgrade failed.
    Error,
    /// The client went away, or never opened its streams.
    ClientGone,
}

impl SessionOutcome {
    /// Every outcome.
    pub(crate) const ALL: [SessionOutcome; 4] = [
        SessionOutcome::Ok,
        SessionOutcome::NonzeroExit,
        SessionOutcome::Error,
        SessionOutcome::ClientGone,
    ];

    /// Label value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SessionOutcome::Ok => "ok",
            SessionOutcome::NonzeroExit => "nonzero_exit",
            SessionOutcome::Error => "error",
            SessionOutcome::ClientGone => "client_gone",
        }
    }
}

/// The exec metrics. Clones share the same series; [`Default`] is unregistered (tests).
#[derive(Clone, Debug)]
pub(crate) struct ExecMetrics {
    /// `tart_kubelet_exec_sessions_total{outcome}`.
    pub sessions: Family<OutcomeLabels, Counter>,
    /// `tart_kubelet_exec_session_seconds`: request received to status written.
    pub session_seconds: Histogram,
    /// `tart_kubelet_exec_setup_seconds`: request received to `tart exec` spawned.
    pub setup_seconds: Histogram,
}

impl Default for ExecMetrics {
    fn default() -> Self {
        Self {
            sessions: Family::default(),
            session_seconds: Histogram::new(SESSION_BUCKETS),
            setup_seconds: Histogram::new(SESSION_BUCKETS),
        }
    }
}

impl ExecMetrics {
    /// Create the metrics and register them under `tart_kubelet_`.
    pub(crate) fn register(registry: &mut Registry) -> Self {
        let m = Self::default();
        let r = registry.sub_registry_with_prefix("tart_kubelet");
        register!(r;
            "exec_sessions", "Exec sessions by how they ended" => m.sessions;
            "exec_session_seconds", "Exec session from the request reaching the agent to the status written" => m.session_seconds;
            "exec_setup_seconds", "Exec request reaching the agent to tart exec spawned" => m.setup_seconds;
        );
        for o in SessionOutcome::ALL {
            let _ = m.sessions.get_or_create(&OutcomeLabels {
                outcome: o.as_str(),
            });
        }
        m
    }

    /// Count a session that ended with `outcome`.
    pub(crate) fn ended(&self, outcome: SessionOutcome) {
        self.sessions
            .get_or_create(&OutcomeLabels {
                outcome: outcome.as_str(),
            })
            .inc();
    }
}

/// One session's clock: started when the request reached the agent.
#[derive(Clone, Debug)]
pub(crate) struct SessionClock {
    received: Instant,
    metrics: ExecMetrics,
}

impl SessionClock {
    /// A clock started when the request was `received`.
    pub(crate) fn since(received: Instant, metrics: ExecMetrics) -> Self {
        Self { received, metrics }
    }

    /// A clock observing into unregistered metrics.
    #[cfg(test)]
    pub(crate) fn unobserved() -> Self {
        Self::since(Instant::now(), ExecMetrics::default())
    }

    fn elapsed(&self) -> f64 {
        self.received.elapsed().as_secs_f64()
    }

    /// `tart exec` was spawned.
    pub(crate) fn spawned(&self) {
        self.metrics.setup_seconds.observe(self.elapsed());
    }

    /// The status was written on the error stream.
    pub(crate) fn status_written(&self) {
        self.metrics.session_seconds.observe(self.elapsed());
    }

    /// The session ended with `outcome`.
    pub(crate) fn ended(&self, outcome: SessionOutcome) {
        self.metrics.ended(outcome);
    }

    /// The connection could not be upgraded: the session never started.
    pub(crate) fn upgrade_failed(&self) {
        self.metrics.ended(SessionOutcome::Error);
    }
}

#[cfg(test)]
mod tests;
