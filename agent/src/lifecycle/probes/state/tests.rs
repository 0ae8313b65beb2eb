use super::*;
use crate::lifecycle::probes::{
    fixtures::{SpecExt, set, spec},
    model::ProbeKind::{Liveness, Readiness, Startup},
};

use ProbeResult::{Error as E, Failure as F, Success as S};

const NOT_STARTED: ProbeStatus = ProbeStatus {
    started: false,
    ready: false,
};
const STARTED: ProbeStatus = ProbeStatus {
    started: true,
    ready: false,
};
const READY: ProbeStatus = ProbeStatus {
    started: true,
    ready: true,
};

#[test]
fn initial_status_follows_kubelets_initial_results() {
    let cases = [
        (set([]), READY),
        (set([spec(Liveness)]), READY),
        (set([spec(Readiness)]), STARTED),
        (set([spec(Startup)]), NOT_STARTED),
        (set([spec(Startup), spec(Liveness)]), NOT_STARTED),
        (set([spec(Readiness), spec(Liveness)]), STARTED),
    ];
    for (i, (s, want)) in cases.into_iter().enumerate() {
        assert_eq!(ProbeStatus::initial(&s), want, "case {i}");
    }
}

/// Feed `steps` in order; the status after each, and the step index of a kill.
fn play(
    s: &ProbeSet,
    steps: &[(ProbeKind, ProbeResult)],
) -> (Vec<ProbeStatus>, Option<(usize, ProbeKind)>) {
    let mut p = Probes::new(s);
    let mut kill = None;
    let mut seen = vec![];
    for (i, (kind, r)) in steps.iter().enumerate() {
        if let Some(k) = p.observe(*kind, *r) {
            assert!(kill.is_none(), "a second kill at step {i}");
            kill = Some((i, k));
        }
        seen.push(p.status());
    }
    (seen, kill)
}

#[test]
fn readiness_flips_only_after_its_thresholds() {
    let s = set([spec(Readiness).successes(2).failures(3)]);
    let cases: [(&[ProbeResult], ProbeStatus); 7] = [
        (&[S], STARTED),
        (&[S, S], READY),
        (&[S, F, S], STARTED),
        (&[S, S, F, F], READY),
        (&[S, S, F, F, F], STARTED),
        (&[S, S, F, S, F, F], READY),
        (&[S, S, F, F, F, S, S], READY),
    ];
    for (results, want) in cases {
        let steps: Vec<_> = results.iter().map(|r| (Readiness, *r)).collect();
        let (seen, kill) = play(&s, &steps);
        assert_eq!(*seen.last().unwrap(), want, "{results:?}");
        assert_eq!(kill, None);
    }
}

#[test]
fn an_error_counts_neither_way_nor_breaks_a_run() {
    let s = set([spec(Readiness).successes(2).failures(2)]);
    let (seen, _) = play(&s, &[(Readiness, S), (Readiness, E), (Readiness, S)]);
    assert_eq!(seen, [STARTED, STARTED, READY]);
    let (seen, _) = play(
        &s,
        &[
            (Readiness, S),
            (Readiness, S),
            (Readiness, E),
            (Readiness, E),
            (Readiness, E),
        ],
    );
    assert_eq!(*seen.last().unwrap(), READY, "errors never fail a probe");
    let l = set([spec(Liveness).failures(2)]);
    let (_, kill) = play(&l, &[(Liveness, F), (Liveness, E), (Liveness, F)]);
    assert_eq!(kill, Some((2, Liveness)));
}

#[test]
fn liveness_kills_once_at_its_failure_threshold_and_everything_stops() {
    let s = set([spec(Readiness), spec(Liveness).failures(3)]);
    let steps = [
        (Readiness, S),
        (Liveness, F),
        (Liveness, S),
        (Liveness, F),
        (Liveness, F),
        (Liveness, F),
        (Liveness, F),
        (Readiness, S),
    ];
    let (seen, kill) = play(&s, &steps);
    assert_eq!(
        kill,
        Some((5, Liveness)),
        "three failures in a row after the success"
    );
    assert_eq!(seen[4], READY);
    assert_eq!(seen[5], STARTED, "a container being killed is not ready");
    assert_eq!(seen[7], STARTED, "attempts after the kill are ignored");
    let mut p = Probes::new(&s);
    for _ in 0..3 {
        p.observe(Liveness, F);
    }
    assert!(p.halted());
    assert!(ProbeKind::ALL.iter().all(|k| !p.runs(*k)));
}

#[test]
fn the_startup_probe_gates_the_others_and_stops_once_passed() {
    let s = set([
        spec(Startup).failures(5),
        spec(Readiness),
        spec(Liveness).failures(1),
    ]);
    let mut p = Probes::new(&s);
    assert_eq!(
        (p.runs(Startup), p.runs(Readiness), p.runs(Liveness)),
        (true, false, false)
    );
    assert_eq!(
        p.observe(Liveness, F),
        None,
        "liveness does not count before start"
    );
    assert_eq!(p.observe(Readiness, S), None);
    assert_eq!(p.status(), NOT_STARTED);
    p.observe(Startup, F);
    p.observe(Startup, S);
    assert_eq!(p.status(), STARTED);
    assert_eq!(
        (p.runs(Startup), p.runs(Readiness), p.runs(Liveness)),
        (false, true, true)
    );
    p.observe(Startup, F);
    assert_eq!(
        p.status(),
        STARTED,
        "a passed startup probe is not probed again"
    );
    p.observe(Readiness, S);
    assert_eq!(p.status(), READY);
}

#[test]
fn a_startup_probe_that_never_passes_kills() {
    let s = set([spec(Startup).failures(3), spec(Liveness)]);
    let (seen, kill) = play(&s, &[(Startup, F), (Startup, F), (Startup, F)]);
    assert_eq!(kill, Some((2, Startup)));
    assert_eq!(*seen.last().unwrap(), NOT_STARTED);
}

#[test]
fn liveness_alone_keeps_the_container_ready_until_it_kills() {
    let s = set([spec(Liveness).failures(2)]);
    let (seen, kill) = play(&s, &[(Liveness, F), (Liveness, F)]);
    assert_eq!(seen, [READY, STARTED]);
    assert_eq!(kill, Some((1, Liveness)));
}
