use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;

use super::*;

fn pod(name: &str, node: Option<&str>, phase: Option<&str>) -> Pod {
    serde_json::from_value(serde_json::json!({
        "metadata": { "name": name },
        "spec": { "containers": [], "nodeName": node },
        "status": { "phase": phase },
    }))
    .unwrap()
}

#[test]
fn each_step_counts_at_its_first_sighting_and_latencies_need_both_ends() {
    let t0 = Instant::now();
    let at = |ms| t0 + Duration::from_millis(ms);
    let mut times = Times::new();
    observe(&mut times, &pod("a", None, Some("Pending")), at(0));
    observe(
        &mut times,
        &pod("a", Some("mac-1"), Some("Pending")),
        at(100),
    );
    observe(
        &mut times,
        &pod("a", Some("mac-1"), Some("Pending")),
        at(150),
    );
    observe(
        &mut times,
        &pod("a", Some("mac-1"), Some("Running")),
        at(1100),
    );
    observe(
        &mut times,
        &pod("a", Some("mac-1"), Some("Running")),
        at(1500),
    );
    observe(
        &mut times,
        &pod("a", Some("mac-1"), Some("Succeeded")),
        at(9000),
    );
    // b: first seen bound already; never Running.
    observe(&mut times, &pod("b", Some("mac-2"), None), at(200));
    let a = times["a"];
    assert_eq!(
        (a.created, a.bound, a.running),
        (Some(at(0)), Some(at(100)), Some(at(1100)))
    );
    assert_eq!(times["b"].bound, Some(at(200)));
    let sched = between(&times, |t| t.created, |t| t.bound);
    assert_eq!(sched, vec![0.1, 0.0]);
    let to_running = between(&times, |t| t.bound, |t| t.running);
    assert_eq!(to_running, vec![1.0]);
}

#[test]
fn a_pod_missing_from_a_relist_was_deleted_and_a_delete_event_times_nothing() {
    let mut r = Record::default();
    r.event(&Event::Init, None);
    r.event(
        &Event::InitApply(pod("a", Some("mac-1"), Some("Running"))),
        None,
    );
    r.event(
        &Event::InitApply(pod("b", Some("mac-1"), Some("Running"))),
        None,
    );
    r.event(&Event::InitDone, None);
    r.event(
        &Event::Delete(pod("c", Some("mac-2"), Some("Succeeded"))),
        None,
    );
    assert_eq!(r.times.len(), 2, "the delete event's Pod has no times");
    assert!(!r.ends["a"].deleted && r.ends["c"].deleted);
    // The watch lost its place; `b` was deleted meanwhile.
    r.event(&Event::Init, None);
    r.event(
        &Event::InitApply(pod("a", Some("mac-1"), Some("Running"))),
        None,
    );
    r.event(&Event::InitDone, None);
    assert!(!r.ends["a"].deleted);
    assert!(r.ends["b"].deleted && r.ends["b"].ran && r.ends["b"].ending.is_none());
    let mut state = PoolState::default();
    ends::count(&mut state, &r.ends);
    assert_eq!(state.lost.iter().collect::<Vec<_>>(), ["b"]);
    assert_eq!(state.ended.keys().collect::<Vec<_>>(), ["c"]);
}
