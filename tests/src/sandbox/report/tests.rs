use super::*;
use crate::sandbox::metrics::parse;

#[test]
fn report_sums_stage_histograms_across_agents_and_fails_on_a_broken_invariant() {
    let text = "tart_kubelet_pod_stage_duration_seconds_bucket{stage=\"pull\",le=\"1.0\"} 1\n\
                    tart_kubelet_pod_stage_duration_seconds_bucket{stage=\"pull\",le=\"+Inf\"} 1\n\
                    tart_kubelet_pod_stage_duration_seconds_count{stage=\"pull\"} 1\n\
                    tart_kubelet_pod_stage_duration_seconds_sum{stage=\"pull\"} 0.5\n\
                    tart_kubelet_tart_kills_total{command=\"clone\"} 2\n";
    let scrapes = vec![parse(text), parse(text)];
    let mut r = Report::default();
    r.add_scrapes(&scrapes);
    assert_eq!(r.stages_seconds.pull.count, 2);
    assert_eq!(r.stages_seconds.clone.count, 0);
    assert_eq!(r.tart_kills, 4);
    r.invariants.push(Invariant {
        name: "no_orphan_vm".into(),
        ok: false,
        detail: "vm x".into(),
    });
    r.finish();
    assert!(!r.ok);
    assert!(r.render().contains("FAILED: vm x"));
    let json = serde_json::to_value(&r).unwrap();
    for key in [
        "schema",
        "scenario",
        "stages_seconds",
        "agent_overhead_seconds",
        "api_requests_per_node_per_minute",
        "agents",
        "invariants",
        "ok",
    ] {
        assert!(json.get(key).is_some(), "missing key {key}");
    }
}

#[test]
fn the_interim_report_marks_teardown_checks_pending_instead_of_failing() {
    let mut r = Report::default();
    r.invariants.push(Invariant {
        name: "workload_completed".into(),
        ok: true,
        detail: String::new(),
    });
    let text = r.render_interim(&["no_orphan_vm"]);
    assert!(!text.contains("FAILED"), "{text}");
    assert!(text.contains("no_orphan_vm"), "{text}");
    assert!(text.contains("pending"), "{text}");
    r.invariants.push(Invariant {
        name: "never_two_vms_for_one_pod".into(),
        ok: false,
        detail: "pod u".into(),
    });
    assert!(r.render_interim(&[]).contains("result so far: FAILED"));
}

#[test]
fn the_chaos_section_is_rendered_and_null_outside_chaos() {
    let mut r = Report::default();
    assert!(serde_json::to_value(&r).unwrap()["chaos"].is_null());
    let mut c = ChaosReport::default();
    c.faults_injected.insert("api_restart", 2);
    c.node_ready_after_api_return_max_seconds = Some(3.25);
    c.node_status_period_seconds = 10.0;
    r.chaos = Some(c);
    let text = r.render();
    assert!(text.contains("api_restart 2"), "{text}");
    assert!(text.contains("at most 3.2 s"), "{text}");
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["chaos"]["faults_injected"]["api_restart"], 2);
    assert_eq!(
        json["chaos"]["node_ready_after_api_return_max_seconds"],
        3.25
    );
}
