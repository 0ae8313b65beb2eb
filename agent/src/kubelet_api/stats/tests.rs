use super::*;

fn t(s: i64) -> Timestamp {
    Timestamp::from_second(s).unwrap()
}

fn view() -> StatsView {
    let usage = |cpu: f64, mem: u64| Usage {
        at: t(1_732_440_010),
        cpu_seconds_total: cpu,
        cpu_cores: Some(0.25),
        working_set_bytes: mem,
    };
    let pod = |name: &str, cpu, mem| PodUsage {
        namespace: "ci".into(),
        name: name.into(),
        uid: format!("uid-{name}"),
        container: "runner".into(),
        image: "ghcr.io/cirruslabs/macos-runner:sonoma".into(),
        vm: format!("tkl-{name}"),
        memory_limit_bytes: Some(8 << 30),
        start: t(1_732_440_000),
        usage: usage(cpu, mem),
    };
    StatsView {
        node_name: "mac-1".into(),
        node_start: t(1_732_430_000),
        node: Some(usage(5000.0, 8 << 30)),
        pods: vec![pod("a", 12.5, 4 << 30), pod("zero", 0.0, 1 << 30)],
    }
}

#[test]
fn the_summary_has_the_fields_metrics_server_reads_and_omits_zero_pods() {
    let s = summary(&view());
    assert_eq!(s["node"]["nodeName"], "mac-1");
    assert_eq!(s["node"]["startTime"], "2024-11-24T06:33:20Z");
    assert_eq!(
        s["node"]["cpu"]["usageCoreNanoSeconds"],
        5_000_000_000_000u64
    );
    assert_eq!(s["node"]["cpu"]["usageNanoCores"], 250_000_000u64);
    assert_eq!(s["node"]["memory"]["workingSetBytes"], 8u64 << 30);
    let pods = s["pods"].as_array().unwrap();
    assert_eq!(pods.len(), 1);
    assert_eq!(pods[0]["podRef"]["uid"], "uid-a");
    assert_eq!(pods[0]["containers"][0]["name"], "runner");
    assert_eq!(
        pods[0]["containers"][0]["memory"]["workingSetBytes"],
        4u64 << 30
    );
    assert_eq!(pods[0]["cpu"]["time"], "2024-11-24T09:20:10Z");
}

#[test]
fn an_empty_node_still_names_itself_and_lists_no_pods() {
    let v = StatsView {
        node: None,
        pods: vec![],
        ..view()
    };
    let s = summary(&v);
    assert_eq!(s["node"]["nodeName"], "mac-1");
    assert!(s["node"].get("cpu").is_none());
    assert_eq!(s["pods"], json!([]));
    assert!(resource_metrics(&v).contains("\nresource_scrape_error 1\n"));
}

#[test]
fn resource_metrics_carry_standard_labels_and_millisecond_timestamps() {
    let m = resource_metrics(&view());
    assert!(
        m.contains("\nnode_cpu_usage_seconds_total 5000 1732440010000\n"),
        "{m}"
    );
    assert!(m.contains(
            "\ncontainer_cpu_usage_seconds_total{container=\"runner\",namespace=\"ci\",pod=\"a\"} 12.5 1732440010000\n"
        ));
    assert!(m.contains(
            "\ncontainer_start_time_seconds{container=\"runner\",namespace=\"ci\",pod=\"a\"} 1732440000\n"
        ));
    assert!(m.contains("# TYPE container_memory_working_set_bytes gauge\n"));
    assert!(!m.contains("pod=\"zero\""));
    assert!(m.contains("\nresource_scrape_error 0\n"));
}
