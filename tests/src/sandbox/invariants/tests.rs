use super::*;
use crate::sandbox::chaos::{api_restart::ApiRestartRecord, duplicate::DuplicateRecord};

fn restart(secs: &[Option<f64>]) -> ApiRestartRecord {
    ApiRestartRecord {
        outage_seconds: 22.0,
        node_ready_at_end: Default::default(),
        node_recovered_after_seconds: secs
            .iter()
            .enumerate()
            .map(|(i, s)| (format!("mac-mini-{}", i + 1), *s))
            .collect(),
    }
}

fn pool(checks: &[(&str, bool, Check)]) -> PoolState {
    let mut p = PoolState::default();
    for (name, succeeded, k) in checks {
        let e = if *succeeded {
            Ending::Succeeded
        } else {
            Ending::Failed
        };
        p.ended.insert(name.to_string(), e);
        p.checks.insert(name.to_string(), *k);
    }
    p
}

#[test]
fn a_rejected_or_unverified_secret_check_fails_and_a_crash_only_excuses_a_cut_short_job() {
    let ok = pool(&[("a", true, Check::Passed), ("b", false, Check::Passed)]);
    assert!(jobs_saw_their_secret(&ok, 0).ok);
    let rejected = pool(&[("a", false, Check::Rejected(3))]);
    let inv = jobs_saw_their_secret(&rejected, 2);
    assert!(!inv.ok);
    assert!(inv.detail.contains("a: job exited 3"), "{}", inv.detail);
    assert!(!jobs_saw_their_secret(&pool(&[("a", true, Check::Unverified)]), 2).ok);
    let cut = pool(&[("a", true, Check::Passed), ("b", false, Check::CutShort)]);
    assert!(!jobs_saw_their_secret(&cut, 0).ok);
    assert!(jobs_saw_their_secret(&cut, 1).ok);
    let mut unchecked = pool(&[("a", true, Check::Passed)]);
    unchecked.ended.insert("b".into(), Ending::Succeeded);
    assert!(!jobs_saw_their_secret(&unchecked, 0).ok);
}

#[test]
fn nodes_must_be_ready_within_the_status_period_after_every_api_restart() {
    let ok = |restarts: Vec<ApiRestartRecord>| {
        let c = ChaosReport {
            node_status_period_seconds: 10.0,
            api_restarts: restarts,
            ..ChaosReport::default()
        };
        chaos(&c)[0].ok
    };
    assert!(ok(vec![]));
    assert!(ok(vec![restart(&[Some(1.0), Some(10.0)])]));
    assert!(!ok(vec![restart(&[Some(1.0)]), restart(&[Some(10.5)])]));
    assert!(!ok(vec![restart(&[Some(1.0), None])]));
}

#[test]
fn one_duplicate_that_did_not_refuse_fails_the_invariant() {
    let refused = DuplicateRecord {
        node: "mac-mini-1".into(),
        exit_code: Some(1),
        exited_by_itself: true,
        ..DuplicateRecord::default()
    };
    let ran = DuplicateRecord {
        exit_code: None,
        exited_by_itself: false,
        ..refused.clone()
    };
    let c = |d: Vec<DuplicateRecord>| ChaosReport {
        duplicate_agents: d,
        ..ChaosReport::default()
    };
    assert!(chaos(&c(vec![refused.clone()]))[1].ok);
    let inv = &chaos(&c(vec![refused, ran]))[1];
    assert!(!inv.ok);
    assert!(inv.detail.contains("mac-mini-1"), "{}", inv.detail);
}

/// The once-per-Pod invariant's verdict for 100 ended Pods with these histogram counts.
fn counted_once(args: &[&str], boot: u64, prov: u64) -> bool {
    let opts = Opts::parse_args(std::iter::once("sandbox").chain(args.iter().copied())).unwrap();
    let mut p = PoolState {
        created: 100,
        ..PoolState::default()
    };
    for i in 0..100 {
        p.ended.insert(format!("runner-{i:04}"), Ending::Succeeded);
    }
    let mut rep = Report::default();
    rep.stages_seconds.boot.count = boot;
    rep.stages_seconds.provision_delay.count = prov;
    let inv = workload(&opts, &p, &rep);
    let once = inv
        .iter()
        .find(|i| i.name == "each_pod_counted_once_per_histogram")
        .unwrap();
    once.ok
}

#[test]
fn without_a_guest_a_vm_that_ended_before_its_address_is_not_a_missing_boot() {
    assert!(counted_once(&[], 100, 100));
    assert!(
        !counted_once(&[], 91, 100),
        "a guest's job waits for its address"
    );
    assert!(counted_once(&["--no-guest"], 91, 100));
    assert!(counted_once(&["--no-guest"], 100, 100));
    assert!(
        !counted_once(&["--no-guest"], 101, 100),
        "a Pod counted twice"
    );
    assert!(
        !counted_once(&["--no-guest"], 91, 99),
        "every Pod's start counts"
    );
}

fn runner(name: &str, phase: &str, deleting: bool) -> Pod {
    serde_json::from_value(serde_json::json!({
        "metadata": {
            "name": name,
            "uid": format!("u-{name}"),
            "deletionTimestamp": deleting.then_some("2026-01-01T00:00:00Z"),
        },
        "spec": { "containers": [] },
        "status": { "phase": phase },
    }))
    .unwrap()
}

/// A fleet run of 100 Pods that all ran and ended: the ticks saw each `Running`, then only
/// the last 60 ended; the Pod garbage collector deleted the first 40 before a tick saw them
/// ended, and the watch saw every end (`lost`: those instead deleted while still `Running`).
fn podgc_run(lost: &[usize]) -> (PoolState, PoolState) {
    use crate::sandbox::fleet::ends;
    let exit_of = |_: &str| Some(0);
    let mut tick = PoolState {
        created: 100,
        ..PoolState::default()
    };
    let mut seen = ends::Ends::new();
    for i in 0..100 {
        let name = format!("runner-{i:04}");
        tick.ran.insert(name.clone());
        ends::observe(
            &mut seen,
            &runner(&name, "Running", false),
            false,
            Some(&exit_of),
        );
        let last = if lost.contains(&i) {
            "Running"
        } else {
            ends::observe(
                &mut seen,
                &runner(&name, "Succeeded", false),
                false,
                Some(&exit_of),
            );
            "Succeeded"
        };
        if i < 40 || lost.contains(&i) {
            ends::observe(&mut seen, &runner(&name, last, true), true, Some(&exit_of));
        } else {
            tick.ended.insert(name.clone(), Ending::Succeeded);
            tick.checks.insert(name, Check::Passed);
        }
    }
    let mut counted = tick.clone();
    ends::count(&mut counted, &seen);
    (tick, counted)
}

fn held(invariants: &[Invariant], name: &str) -> bool {
    invariants.iter().find(|i| i.name == name).unwrap().ok
}

#[test]
fn a_fleet_run_whose_ended_pods_podgc_deleted_completes_with_every_pod_counted_once() {
    let opts = Opts::parse_args(["sandbox", "--scenario", "fleet", "--pods", "100"]).unwrap();
    let mut rep = Report::default();
    rep.stages_seconds.boot.count = 100;
    rep.stages_seconds.provision_delay.count = 100;
    let (tick, counted) = podgc_run(&[]);
    assert!(!tick.done(100), "the ticks alone never see 40 of the ends");
    // The workload ends (`workload_completed` holds) and counts each Pod once.
    assert!(counted.done(100));
    assert_eq!(counted.ended.len(), 100);
    let inv = workload(&opts, &counted, &rep);
    assert!(held(&inv, "each_pod_counted_once_per_histogram"), "{inv:?}");
    assert!(held(&inv, "pods_in_expected_terminal_state"), "{inv:?}");
    assert!(jobs_saw_their_secret(&counted, 0).ok);
    // A Pod deleted while Running is lost: the workload still ends, and the run fails on it.
    let (_, counted) = podgc_run(&[7]);
    assert!(counted.done(100));
    assert_eq!(counted.ended.len(), 99);
    let inv = workload(&opts, &counted, &rep);
    let terminal = inv
        .iter()
        .find(|i| i.name == "pods_in_expected_terminal_state")
        .unwrap();
    assert!(!terminal.ok);
    assert!(
        terminal.detail.contains("runner-0007"),
        "{}",
        terminal.detail
    );
}

#[test]
fn a_job_not_checked_before_its_pod_was_deleted_fails_the_secret_invariant() {
    let p = pool(&[("a", true, Check::Passed), ("b", true, Check::NotChecked)]);
    let inv = jobs_saw_their_secret(&p, 3);
    assert!(!inv.ok);
    assert!(inv.detail.contains("b: not checked"), "{}", inv.detail);
    assert!(inv.detail.contains("1 not checked"), "{}", inv.detail);
}
