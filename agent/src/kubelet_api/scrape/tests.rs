use k8s_openapi::jiff::Timestamp;

use super::*;
use crate::kubelet_api::stats::Usage;

fn pod(name: &str, states: &[&str]) -> Arc<Pod> {
    let statuses: Vec<_> = states
        .iter()
        .map(|s| {
            let state = match *s {
                "running" => serde_json::json!({"running": {}}),
                "terminated" => serde_json::json!({"terminated": {"exitCode": 0}}),
                _ => serde_json::json!({"waiting": {"reason": "ContainerCreating"}}),
            };
            serde_json::json!({"name": "c", "image": "i", "imageID": "", "ready": false,
                               "restartCount": 0, "state": state})
        })
        .collect();
    Arc::new(
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "namespace": "ci"},
            "status": {"containerStatuses": statuses}
        }))
        .unwrap(),
    )
}

#[test]
fn kubelet_series_count_running_pods_and_containers_by_state() {
    let pods = [
        pod("a", &["running"]),
        pod("b", &["terminated"]),
        pod("c", &["waiting"]),
        pod("d", &["running"]),
    ];
    let text = kubelet_series("mac-\"1\"", &pods);
    for line in [
        "# TYPE kubelet_node_name gauge",
        "kubelet_node_name{node=\"mac-\\\"1\\\"\"} 1",
        "kubelet_running_pods 2",
        "kubelet_running_containers{container_state=\"running\"} 2",
        "kubelet_running_containers{container_state=\"exited\"} 1",
    ] {
        assert!(text.contains(line), "missing {line} in\n{text}");
    }
    assert!(!text.contains("created"), "{text}");
}

fn usage_pod(name: &str, cpu: f64, limit: Option<u64>) -> PodUsage {
    PodUsage {
        namespace: "ci".into(),
        name: name.into(),
        uid: format!("uid-{name}"),
        container: "runner".into(),
        image: "ghcr.io/cirruslabs/macos-runner:sonoma".into(),
        vm: format!("tkl-{name}"),
        memory_limit_bytes: limit,
        start: Timestamp::from_second(1_732_440_000).unwrap(),
        usage: Usage {
            at: Timestamp::from_millisecond(1_732_440_010_500).unwrap(),
            cpu_seconds_total: cpu,
            cpu_cores: None,
            working_set_bytes: 4 << 30,
        },
    }
}

#[test]
fn cadvisor_rows_carry_the_labels_the_recording_rules_join_on() {
    let v = StatsView {
        node_name: "mac-1".into(),
        node_start: Timestamp::from_second(1_732_430_000).unwrap(),
        node: None,
        pods: vec![
            usage_pod("a", 12.5, Some(8 << 30)),
            usage_pod("b", 3.0, None),
            usage_pod("idle", 0.0, Some(1)),
        ],
    };
    let text = cadvisor(&v);
    let a = "container=\"runner\",id=\"/tart/tkl-a\",image=\"ghcr.io/cirruslabs/macos-runner:sonoma\",name=\"tkl-a\",namespace=\"ci\",pod=\"a\"";
    for line in [
        "# TYPE container_cpu_usage_seconds_total counter".to_owned(),
        format!("container_cpu_usage_seconds_total{{{a},cpu=\"total\"}} 12.5 1732440010500"),
        format!("container_memory_working_set_bytes{{{a}}} 4294967296 1732440010500"),
        format!("container_memory_rss{{{a}}} 4294967296 1732440010500"),
        format!("container_memory_usage_bytes{{{a}}} 4294967296 1732440010500"),
        format!("container_spec_memory_limit_bytes{{{a}}} 8589934592"),
        format!("container_start_time_seconds{{{a}}} 1732440000"),
    ] {
        assert!(text.contains(&line), "missing {line} in\n{text}");
    }
    assert!(text.contains("pod=\"b\"}"), "{text}");
    assert!(
        !text.contains("container_spec_memory_limit_bytes{container=\"runner\",id=\"/tart/tkl-b\""),
        "an unknown limit is absent, not 0:\n{text}"
    );
    assert!(
        !text.contains("idle"),
        "no positive sample, no row:\n{text}"
    );
    for absent in [
        "container_memory_cache",
        "container_memory_swap",
        "container_network_",
    ] {
        assert!(!text.contains(absent), "{absent} is not measured:\n{text}");
    }
}

#[test]
fn metrics_puts_kubelets_series_before_the_agents_registry_in_the_text_format() {
    let mut reg = Registry::default();
    let process = ProcessMetrics::register(&mut reg);
    let scrape = Scrape {
        node_name: "mac-1".into(),
        registry: Arc::new(reg),
        process,
        probes: probes::ProberCounts::default(),
    };
    let text = metrics(&scrape, &[]).unwrap();
    assert!(text.starts_with("# HELP kubelet_node_name"), "{text}");
    assert!(
        text.contains("# TYPE process_cpu_seconds_total counter"),
        "{text}"
    );
    assert!(!text.contains("# EOF"), "{text}");
    let probes = probes_text(&scrape);
    assert!(
        probes.contains("# TYPE prober_probe_total counter"),
        "{probes}"
    );
    assert!(probes.contains("process_start_time_seconds "), "{probes}");
}
