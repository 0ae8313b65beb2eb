//! Logging of API failures, with the RBAC advice kept for 403s that persist.
//!
//! Right after an API server restart its authorization cache warms up, and a request can be
//! refused (403) for a few seconds although the RBAC rules are right. So a 403 is first logged
//! at `warn` as a retry; the advice to fix RBAC (at `error`, naming the verb and resource) is
//! logged once, when the same call is still forbidden [`PERSISTENT`] after its first 403 with
//! no success in between. The decision is [`on_forbidden`], pure with an injected clock.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use tokio::time::Instant;
use tracing::{debug, error, warn};

/// How long a call must stay forbidden before the 403 is taken for a missing RBAC rule.
pub(crate) const PERSISTENT: Duration = Duration::from_secs(30);

/// A run of 403s of one call with no success in between.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Streak {
    /// The first 403 of the run.
    pub since: Instant,
    /// The advice was logged.
    pub advised: bool,
}

/// How to log one 403.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The first of a run: `warn`, it may be transient.
    Retrying,
    /// Persistent: the RBAC advice at `error`, once per run.
    Advise,
    /// Already said: `debug`.
    Quiet,
}

/// The streak after a 403 at `now`, given the streak before it, and how to log it.
pub(crate) fn on_forbidden(before: Option<Streak>, now: Instant) -> (Streak, Verdict) {
    match before {
        None => (
            Streak {
                since: now,
                advised: false,
            },
            Verdict::Retrying,
        ),
        Some(s) if !s.advised && now.saturating_duration_since(s.since) >= PERSISTENT => {
            (Streak { advised: true, ..s }, Verdict::Advise)
        }
        Some(s) => (s, Verdict::Quiet),
    }
}

/// Logs API failures; 403s follow [`on_forbidden`] per (verb, resource) until that call
/// succeeds again, so a missing RBAC rule is one clear line, not a flood, and a transient
/// one is no false alarm.
#[derive(Clone, Debug, Default)]
pub(crate) struct ApiAccess {
    forbidden: Arc<Mutex<BTreeMap<(&'static str, &'static str), Streak>>>,
}

impl ApiAccess {
    /// `verb` on `resource` failed with `err`.
    pub(crate) fn failed(&self, verb: &'static str, resource: &'static str, err: &kube::Error) {
        let kube::Error::Api(s) = err else {
            warn!(verb, resource, error = %err, "api request failed");
            return;
        };
        if s.code != 403 {
            warn!(verb, resource, error = %err, "api request failed");
            return;
        }
        let verdict = {
            let mut f = self.lock();
            let (streak, verdict) = on_forbidden(f.get(&(verb, resource)).copied(), Instant::now());
            f.insert((verb, resource), streak);
            verdict
        };
        match verdict {
            Verdict::Retrying => warn!(
                verb,
                resource,
                reason = %s.message,
                "api request forbidden; retrying (normal for a few seconds after an API server restart)"
            ),
            Verdict::Advise => error!(
                verb,
                resource,
                reason = %s.message,
                persisted = ?PERSISTENT,
                "forbidden: cannot {verb} {resource}; grant it to the agent (packaging/kubernetes/rbac.yaml)"
            ),
            Verdict::Quiet => debug!(verb, resource, "still forbidden"),
        }
    }

    /// `verb` on `resource` succeeded.
    pub(crate) fn ok(&self, verb: &'static str, resource: &'static str) {
        let mut f = self.lock();
        if !f.is_empty() {
            f.remove(&(verb, resource));
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<(&'static str, &'static str), Streak>> {
        self.forbidden
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests;
