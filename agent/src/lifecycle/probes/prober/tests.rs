//! The prober on paused tokio time with a scripted checker: each probe's attempts take the
//! scripted time and end with the scripted outcome (default: an instant success).

use std::{
    collections::{HashMap, VecDeque},
    sync::{Arc, Mutex},
};

use super::*;
use crate::lifecycle::handlers::outcome::ProbeResult;
use crate::lifecycle::probes::{
    fixtures::{SpecExt, set, spec},
    model::{Action, ProbeKind::*},
};

const DEADLINE: Duration = Duration::from_secs(3600);

#[derive(Default)]
struct Inner {
    script: HashMap<ProbeKind, VecDeque<(u64, Outcome)>>,
    /// (kind, started, ended) per attempt.
    calls: Vec<(ProbeKind, Instant, Option<Instant>)>,
    in_flight: HashMap<ProbeKind, u32>,
    max_in_flight: u32,
    alive: u32,
}

#[derive(Clone, Default)]
struct Script(Arc<Mutex<Inner>>);

impl Script {
    /// The next attempts of `kind`: (seconds taken, outcome) each.
    fn push(&self, kind: ProbeKind, steps: impl IntoIterator<Item = (u64, Outcome)>) {
        let mut s = self.0.lock().unwrap();
        s.script.entry(kind).or_default().extend(steps);
    }

    fn fail(&self, kind: ProbeKind, n: usize) {
        self.push(kind, (0..n).map(|_| (0, Outcome::Failure("no".into()))));
    }

    /// Start times of `kind`'s attempts, in seconds after `t0`.
    fn starts(&self, kind: ProbeKind, t0: Instant) -> Vec<u64> {
        let s = self.0.lock().unwrap();
        s.calls
            .iter()
            .filter(|c| c.0 == kind)
            .map(|c| (c.1 - t0).as_secs())
            .collect()
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.0.lock().unwrap()
    }
}

/// Counts attempts alive, so a dropped attempt shows.
struct Alive(Arc<Mutex<Inner>>, ProbeKind, usize);

impl Drop for Alive {
    fn drop(&mut self) {
        let mut s = self.0.lock().unwrap();
        s.alive -= 1;
        *s.in_flight.get_mut(&self.1).unwrap() -= 1;
    }
}

impl Checker for Script {
    async fn check(&self, action: &Action, _timeout: Duration) -> Outcome {
        let Action::Exec { command } = action else {
            panic!("fixtures probe with exec")
        };
        let kind = *ProbeKind::ALL
            .iter()
            .find(|k| k.as_str() == command[0])
            .unwrap();
        let (secs, outcome, guard) = {
            let mut s = self.0.lock().unwrap();
            let (secs, outcome) = s
                .script
                .get_mut(&kind)
                .and_then(VecDeque::pop_front)
                .unwrap_or((0, Outcome::Success));
            s.calls.push((kind, Instant::now(), None));
            let n = s.in_flight.entry(kind).or_default();
            *n += 1;
            let n = *n;
            s.max_in_flight = s.max_in_flight.max(n);
            s.alive += 1;
            let index = s.calls.len() - 1;
            (secs, outcome, Alive(self.0.clone(), kind, index))
        };
        tokio::time::sleep(Duration::from_secs(secs)).await;
        self.0.lock().unwrap().calls[guard.2].2 = Some(Instant::now());
        outcome
    }
}

#[derive(Clone, Default)]
struct Reports(Arc<Mutex<Vec<(ProbeKind, Outcome)>>>);

impl ProbeReport for Reports {
    fn attempt(&self, kind: ProbeKind, outcome: &Outcome) {
        self.0.lock().unwrap().push((kind, outcome.clone()));
    }
}

async fn wait_kill(h: &mut ProberHandle) -> Kill {
    let k = tokio::time::timeout(DEADLINE, h.kill.wait_for(Option::is_some))
        .await
        .expect("a kill in time")
        .unwrap();
    k.clone().unwrap()
}

#[tokio::test(start_paused = true)]
async fn attempts_start_after_the_initial_delay_then_every_period() {
    let script = Script::default();
    let t0 = Instant::now();
    let _h = spawn(
        set([spec(Liveness).initial(5).period(10)]),
        script.clone(),
        (),
        t0,
    );
    tokio::time::sleep(Duration::from_secs(36)).await;
    assert_eq!(script.starts(Liveness, t0), [5, 15, 25, 35]);
}

#[tokio::test(start_paused = true)]
async fn a_container_that_started_earlier_is_probed_at_once() {
    let script = Script::default();
    let t0 = Instant::now();
    tokio::time::sleep(Duration::from_secs(100)).await;
    let _h = spawn(set([spec(Readiness).initial(30)]), script.clone(), (), t0);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(script.starts(Readiness, t0), [100]);
}

#[tokio::test(start_paused = true)]
async fn readiness_turns_ready_after_its_success_threshold() {
    let script = Script::default();
    script.fail(Readiness, 1);
    let t0 = Instant::now();
    let mut h = spawn(set([spec(Readiness).successes(2)]), script.clone(), (), t0);
    assert_eq!(
        *h.status.borrow(),
        ProbeStatus {
            started: true,
            ready: false
        }
    );
    tokio::time::timeout(DEADLINE, h.status.wait_for(|s| s.ready))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        t0.elapsed(),
        Duration::from_secs(20),
        "F at 0, S at 10, S at 20"
    );
}

#[tokio::test(start_paused = true)]
async fn liveness_failure_kills_once_and_probing_stops() {
    let script = Script::default();
    script.fail(Liveness, 10);
    let reports = Reports::default();
    let t0 = Instant::now();
    let mut h = spawn(
        set([spec(Liveness).failures(3).grace(7), spec(Readiness)]),
        script.clone(),
        reports.clone(),
        t0,
    );
    let kill = wait_kill(&mut h).await;
    assert_eq!(
        kill,
        Kill {
            kind: Liveness,
            message: "Container vm failed liveness probe".into(),
            grace: Some(Duration::from_secs(7)),
        }
    );
    assert_eq!(t0.elapsed(), Duration::from_secs(20));
    assert!(!h.status.borrow().ready, "not ready while being killed");
    tokio::time::sleep(Duration::from_secs(100)).await;
    assert_eq!(
        script.starts(Liveness, t0),
        [0, 10, 20],
        "no attempt after the kill"
    );
    assert_eq!(script.starts(Readiness, t0), [0, 10, 20]);
    assert_eq!(script.inner().alive, 0);
    assert!(h.kill.has_changed().is_ok(), "the channel stays open");
    let failures = reports
        .0
        .lock()
        .unwrap()
        .iter()
        .filter(|(k, o)| *k == Liveness && matches!(o, Outcome::Failure(_)))
        .count();
    assert_eq!(failures, 3);
}

#[tokio::test(start_paused = true)]
async fn a_startup_probe_that_never_passes_kills() {
    let script = Script::default();
    script.fail(Startup, 5);
    let t0 = Instant::now();
    let mut h = spawn(
        set([spec(Startup).failures(2).period(3), spec(Liveness)]),
        script.clone(),
        (),
        t0,
    );
    let kill = wait_kill(&mut h).await;
    assert_eq!(kill.kind, Startup);
    assert_eq!(kill.message, "Container vm failed startup probe");
    assert_eq!(
        kill.event_message(true),
        "Container vm failed startup probe, will be restarted"
    );
    assert_eq!(
        kill.event_message(false),
        "Container vm failed startup probe"
    );
    assert_eq!(script.starts(Startup, t0), [0, 3]);
    assert!(script.starts(Liveness, t0).is_empty());
}

#[tokio::test(start_paused = true)]
async fn the_startup_probe_gates_the_others_which_start_once_it_passes() {
    let script = Script::default();
    script.fail(Startup, 2);
    let t0 = Instant::now();
    let mut h = spawn(
        set([
            spec(Startup).period(2).failures(10),
            spec(Readiness).period(10),
            spec(Liveness).period(10),
        ]),
        script.clone(),
        (),
        t0,
    );
    assert!(!h.status.borrow().started);
    tokio::time::timeout(DEADLINE, h.status.wait_for(|s| s.ready))
        .await
        .unwrap()
        .unwrap();
    tokio::time::sleep(Duration::from_secs(31)).await;
    assert_eq!(script.starts(Startup, t0), [0, 2, 4], "stops once passed");
    assert_eq!(script.starts(Readiness, t0), [4, 14, 24, 34]);
    assert_eq!(script.starts(Liveness, t0), [4, 14, 24, 34]);
}

#[tokio::test(start_paused = true)]
async fn a_slow_attempt_holds_the_next_back_and_missed_ticks_are_dropped() {
    let script = Script::default();
    script.push(Readiness, [(25, Outcome::Success), (3, Outcome::Success)]);
    let t0 = Instant::now();
    let _h = spawn(set([spec(Readiness).period(10)]), script.clone(), (), t0);
    tokio::time::sleep(Duration::from_secs(45)).await;
    assert_eq!(
        script.starts(Readiness, t0),
        [0, 25, 30, 40],
        "the 10 s tick is dropped; the 20 s one runs when the slow attempt ends"
    );
    assert_eq!(script.inner().max_in_flight, 1);
}

#[tokio::test(start_paused = true)]
async fn errors_are_reported_but_count_neither_way() {
    let script = Script::default();
    let e = || (0, Outcome::Error("VM is not running".into()));
    let f = || (0, Outcome::Failure("no".into()));
    script.push(Liveness, [f(), e(), e(), f()]);
    let reports = Reports::default();
    let t0 = Instant::now();
    let mut h = spawn(
        set([spec(Liveness).failures(2)]),
        script.clone(),
        reports.clone(),
        t0,
    );
    wait_kill(&mut h).await;
    assert_eq!(t0.elapsed(), Duration::from_secs(30));
    let results: Vec<_> = reports
        .0
        .lock()
        .unwrap()
        .iter()
        .map(|(_, o)| o.result())
        .collect();
    assert_eq!(
        results,
        [
            ProbeResult::Failure,
            ProbeResult::Error,
            ProbeResult::Error,
            ProbeResult::Failure
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn dropping_the_handle_ends_the_attempt_under_way() {
    let script = Script::default();
    script.push(Liveness, [(1000, Outcome::Success)]);
    let h = spawn(set([spec(Liveness)]), script.clone(), (), Instant::now());
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(script.inner().alive, 1);
    drop(h);
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(script.inner().alive, 0);
}

#[tokio::test(start_paused = true)]
async fn an_empty_set_is_ready_at_once_and_never_probes() {
    let script = Script::default();
    let h = spawn(set([]), script.clone(), (), Instant::now());
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(
        *h.status.borrow(),
        ProbeStatus {
            started: true,
            ready: true
        }
    );
    assert!(script.inner().calls.is_empty());
}

#[test]
fn events_carry_kubelets_words() {
    let cases = [
        (Readiness, Outcome::Success, None),
        (
            Readiness,
            Outcome::Failure("HTTP probe failed with statuscode: 500".into()),
            Some((
                EventReason::Unhealthy,
                "Readiness probe failed: HTTP probe failed with statuscode: 500",
            )),
        ),
        (
            Liveness,
            Outcome::Error("VM \"x\" is not running".into()),
            Some((
                EventReason::Unhealthy,
                "Liveness probe errored and resulted in unknown state: VM \"x\" is not running",
            )),
        ),
        (
            Startup,
            Outcome::Warning("Probe terminated redirects, Response body: ".into()),
            Some((
                EventReason::ProbeWarning,
                "Startup probe warning: Probe terminated redirects, Response body: ",
            )),
        ),
    ];
    for (kind, outcome, want) in cases {
        let got = event_reason(&outcome).zip(event_message(kind, &outcome));
        assert_eq!(
            got.as_ref().map(|(r, m)| (*r, m.as_str())),
            want,
            "{outcome:?}"
        );
    }
    assert_eq!(EventReason::ProbeWarning.as_str(), "ProbeWarning");
}

#[test]
fn missed_slots_are_dropped() {
    let t = Instant::now();
    let s = Duration::from_secs;
    assert_eq!(next_due(t, s(10), t + s(1)), t + s(10));
    assert_eq!(next_due(t, s(10), t + s(10)), t + s(10));
    assert_eq!(next_due(t, s(10), t + s(25)), t + s(20));
    assert_eq!(next_due(t + s(20), s(10), t + s(29)), t + s(30));
}
