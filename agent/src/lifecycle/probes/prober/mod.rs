//! The prober: one task per container run that makes each probe's attempts on time, counts
//! them ([`state`](super::state)), publishes the container's `started`/`ready`, and publishes
//! one [`Kill`] when liveness or startup fails for good. It reports every attempt to a
//! [`ProbeReport`] (metrics, events) and leaves the kill itself, status, events and metrics to
//! the Pod's worker.
//!
//! Timing, as kubelet's worker: the first attempt `initialDelaySeconds` after the container
//! started, then one every `periodSeconds` on a fixed grid; an attempt that overruns its period
//! holds the next back until it ends (never two of one probe at once), and ticks missed
//! meanwhile are dropped. Readiness and liveness wait for the startup probe and make their
//! first attempt as soon as it passed.

use std::time::Duration;

use futures::{StreamExt, stream::FuturesUnordered};
use tokio::{
    sync::watch,
    task::AbortHandle,
    time::{Instant, sleep_until},
};
use tracing::{Instrument, debug, info};

use super::{
    super::handlers::outcome::Outcome,
    check::Checker,
    model::{Action, ProbeKind, ProbeSet},
    state::{ProbeStatus, Probes},
};

/// Liveness or startup failed: the container must be killed (and restarted per its policy).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Kill {
    /// Which probe failed.
    pub kind: ProbeKind,
    /// kubelet's words: `Container <name> failed liveness probe`.
    pub message: String,
    /// The probe's own termination grace, which takes precedence over the Pod's.
    pub grace: Option<Duration>,
}

impl Kill {
    /// kubelet's `Killing` event message: the kill message, plus `, will be restarted` when
    /// the restart policy starts the container again.
    pub(crate) fn event_message(&self, restarts: bool) -> String {
        if restarts {
            format!("{}, will be restarted", self.message)
        } else {
            self.message.clone()
        }
    }
}

/// Where each attempt is told (metrics, `Unhealthy` events). Called on the prober's task;
/// keep it quick and non-blocking.
pub(crate) trait ProbeReport: Send + Sync + 'static {
    /// One attempt of `kind` ended with `outcome`.
    fn attempt(&self, kind: ProbeKind, outcome: &Outcome);
}

impl ProbeReport for () {
    fn attempt(&self, _kind: ProbeKind, _outcome: &Outcome) {}
}

/// The event reason of an attempt's event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum EventReason {
    /// A failure or an error (`Warning`).
    Unhealthy,
    /// A success with a remark (`Warning`).
    ProbeWarning,
}

impl EventReason {
    /// The reason as Kubernetes shows it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Unhealthy => "Unhealthy",
            Self::ProbeWarning => "ProbeWarning",
        }
    }
}

/// kubelet's event message for an attempt (every one is a `Warning`); `None` for a plain
/// success, which has no event.
pub(crate) fn event_message(kind: ProbeKind, outcome: &Outcome) -> Option<String> {
    let title = kind.title();
    match outcome {
        Outcome::Success => None,
        Outcome::Warning(m) => Some(format!("{title} probe warning: {m}")),
        Outcome::Failure(m) => Some(format!("{title} probe failed: {m}")),
        Outcome::Error(m) => Some(format!(
            "{title} probe errored and resulted in unknown state: {m}"
        )),
    }
}

/// The reason for [`event_message`]'s event.
pub(crate) fn event_reason(outcome: &Outcome) -> Option<EventReason> {
    match outcome {
        Outcome::Success => None,
        Outcome::Warning(_) => Some(EventReason::ProbeWarning),
        Outcome::Failure(_) | Outcome::Error(_) => Some(EventReason::Unhealthy),
    }
}

/// A running prober. Dropping it stops the task and whatever attempt is under way.
#[derive(Debug)]
pub(crate) struct ProberHandle {
    /// The container's `started`/`ready`, current from the start.
    pub status: watch::Receiver<ProbeStatus>,
    /// Set once, when liveness or startup failed for good. Both channels stay open until the
    /// handle drops, also once probing is over.
    pub kill: watch::Receiver<Option<Kill>>,
    task: AbortHandle,
}

/// What a prober says next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ProberEvent {
    /// `started` or `ready` may have changed: read [`ProberHandle::status`].
    Status,
    /// Liveness or startup failed for good.
    Kill(Kill),
}

impl ProberHandle {
    /// The prober's next word; never, once it has nothing more to say.
    pub(crate) async fn next(&mut self) -> ProberEvent {
        loop {
            tokio::select! {
                r = self.status.changed() => match r {
                    Ok(()) => return ProberEvent::Status,
                    Err(_) => return std::future::pending().await,
                },
                r = self.kill.changed() => {
                    if r.is_err() {
                        return std::future::pending().await;
                    }
                    if let Some(kill) = self.kill.borrow_and_update().clone() {
                        return ProberEvent::Kill(kill);
                    }
                }
            }
        }
    }
}

impl Drop for ProberHandle {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Start probing a container that started at `container_started`, on the current span.
/// With an empty set nothing is ever probed: ready at once.
pub(crate) fn spawn<C: Checker, R: ProbeReport>(
    set: ProbeSet,
    checker: C,
    report: R,
    container_started: Instant,
) -> ProberHandle {
    let probes = Probes::new(&set);
    let (status_tx, status) = watch::channel(probes.status());
    let (kill_tx, kill) = watch::channel(None);
    let schedule = Schedule {
        set,
        probes,
        slots: [None; 3],
        status_tx,
        kill_tx,
    };
    let run = run(schedule, checker, report, container_started);
    let task = tokio::spawn(run.instrument(tracing::Span::current()));
    ProberHandle {
        status,
        kill,
        task: task.abort_handle(),
    }
}

/// One probe's schedule: the grid slot of its next attempt, and whether one is under way.
#[derive(Debug, Clone, Copy)]
struct Slot {
    due: Instant,
    busy: bool,
}

/// The prober's state between awaits: the counting, each probe's schedule, the publishers.
struct Schedule {
    set: ProbeSet,
    probes: Probes,
    slots: [Option<Slot>; 3],
    status_tx: watch::Sender<ProbeStatus>,
    kill_tx: watch::Sender<Option<Kill>>,
}

impl Schedule {
    /// The probes whose slot has come, marked under way: (kind, action, timeout) each.
    fn take_due(&mut self, now: Instant) -> Vec<(ProbeKind, Action, Duration)> {
        let mut due = vec![];
        for kind in ProbeKind::ALL {
            let runs = self.probes.runs(kind);
            let (Some(spec), Some(slot)) = (self.set.get(kind), self.slots[kind.index()].as_mut())
            else {
                continue;
            };
            if runs && !slot.busy && slot.due <= now {
                slot.busy = true;
                due.push((kind, spec.action.clone(), spec.timeout));
            }
        }
        due
    }

    /// When the next slot comes; `None` when no probe is waiting for one.
    fn next_wake(&self) -> Option<Instant> {
        ProbeKind::ALL
            .into_iter()
            .filter(|k| self.probes.runs(*k))
            .filter_map(|k| self.slots[k.index()].filter(|s| !s.busy).map(|s| s.due))
            .min()
    }

    /// Count an attempt that ended at `now`, schedule the probe's next one, publish a changed
    /// status, and a kill when it means one. `true` when probing is over (a kill).
    fn finished(&mut self, kind: ProbeKind, outcome: &Outcome, now: Instant) -> bool {
        let container = &self.set.container;
        let was = self.probes.status();
        let kill = self.probes.observe(kind, outcome.result());
        if let (Some(spec), Some(slot)) = (self.set.get(kind), self.slots[kind.index()].as_mut()) {
            slot.busy = false;
            slot.due = next_due(slot.due, spec.period, now);
        }
        let status = self.probes.status();
        if status.started && !was.started {
            info!(%container, "startup probe passed");
            // Readiness and liveness waited for this: their first attempt is now at the
            // earliest.
            for k in [ProbeKind::Readiness, ProbeKind::Liveness] {
                if let Some(slot) = self.slots[k.index()].as_mut() {
                    slot.due = slot.due.max(now);
                }
            }
        }
        if status != was {
            debug!(%container, ?status, "probe status changed");
            self.status_tx.send_replace(status);
        }
        let Some(kind) = kill else {
            return false;
        };
        info!(%container, probe = kind.as_str(), "probe failed; the container is to be killed");
        self.kill_tx.send_replace(Some(Kill {
            kind,
            message: format!("Container {container} failed {} probe", kind.as_str()),
            grace: self.set.get(kind).and_then(|s| s.termination_grace),
        }));
        true
    }
}

async fn run<C: Checker, R: ProbeReport>(
    mut schedule: Schedule,
    checker: C,
    report: R,
    started: Instant,
) {
    // A container that started before the prober (an agent restart) is probed at once, on a
    // grid from now.
    let spawned = Instant::now();
    for (slot, kind) in schedule.slots.iter_mut().zip(ProbeKind::ALL) {
        *slot = schedule.set.get(kind).map(|s| Slot {
            due: (started + s.initial_delay).max(spawned),
            busy: false,
        });
    }
    let mut attempts = FuturesUnordered::new();
    loop {
        for (kind, action, timeout) in schedule.take_due(Instant::now()) {
            let checker = &checker;
            attempts.push(async move { (kind, checker.check(&action, timeout).await) });
        }
        let wake = schedule.next_wake();
        tokio::select! {
            Some((kind, outcome)) = attempts.next(), if !attempts.is_empty() => {
                report.attempt(kind, &outcome);
                if schedule.finished(kind, &outcome, Instant::now()) {
                    break;
                }
            }
            () = sleep_until(wake.unwrap_or_else(Instant::now)), if wake.is_some() => {}
            else => break, // nothing under way and nothing will run again
        }
    }
    // Attempts still under way (other probes, after a kill) are dropped here: their processes
    // and sockets end with them. The senders stay until the handle aborts the task.
    drop(attempts);
    std::future::pending::<()>().await;
}

/// The grid slot after `due` for an attempt that ended at `now`: the next one after `due`, or,
/// when the attempt overran it, the latest slot already passed (so the next attempt starts at
/// once and the ones missed meanwhile are dropped, as Go's ticker drops them).
fn next_due(due: Instant, period: Duration, now: Instant) -> Instant {
    let next = due + period;
    if next > now || period.is_zero() {
        return next;
    }
    let missed = (now - due).as_nanos() / period.as_nanos();
    let missed = u32::try_from(missed).unwrap_or(u32::MAX);
    due + period * missed
}

#[cfg(test)]
mod tests;
