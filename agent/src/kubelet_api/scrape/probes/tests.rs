use super::*;

fn runner(uid: &str) -> ProbedContainer {
    ProbedContainer {
        namespace: "ci".into(),
        pod: format!("pod-{uid}"),
        pod_uid: uid.into(),
        container: "runner".into(),
    }
}

#[test]
fn counts_render_with_kubelets_labels_and_go_with_their_pod() {
    let c = ProberCounts::default();
    c.count(&runner("u1"), ProbeType::Readiness, ProbeResult::Successful);
    c.count(&runner("u1"), ProbeType::Readiness, ProbeResult::Successful);
    c.count(&runner("u1"), ProbeType::Liveness, ProbeResult::Failed);
    c.count(&runner("u2"), ProbeType::Startup, ProbeResult::Successful);
    let text = c.render();
    assert!(text.contains("# TYPE prober_probe_total counter"), "{text}");
    assert!(
        text.contains(
            "prober_probe_total{container=\"runner\",namespace=\"ci\",pod=\"pod-u1\",pod_uid=\"u1\",probe_type=\"Readiness\",result=\"successful\"} 2"
        ),
        "{text}"
    );
    assert!(
        text.contains("pod_uid=\"u1\",probe_type=\"Liveness\",result=\"failed\"} 1"),
        "{text}"
    );
    c.forget("u1");
    let text = c.render();
    assert!(!text.contains("u1"), "{text}");
    assert!(text.contains("probe_type=\"Startup\""), "{text}");
}
