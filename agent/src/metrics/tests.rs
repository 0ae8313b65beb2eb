use super::*;

#[test]
fn every_agreed_node_metric_is_exposed() {
    let mut reg = Registry::default();
    let m = NodeMetrics::register(&mut reg);
    m.set_tart_version(Some("2.35.0"));
    m.lease_renew_duration.observe(0.01);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &reg).unwrap();
    for name in [
        "tart_kubelet_build_info{version=",
        "tart_version=\"2.35.0\"",
        "tart_kubelet_node_lease_renewals_total{outcome=\"ok\"} 0",
        "tart_kubelet_node_lease_renew_duration_seconds_count 1",
        "tart_kubelet_node_status_updates_total{outcome=\"error\"} 0",
        "tart_kubelet_node_condition{condition=\"TartReady\"} 0",
        "tart_kubelet_vm_slots 0",
        "tart_kubelet_vm_slots_used 0",
        "tart_kubelet_tart_home_free_bytes 0",
        "tart_kubelet_api_errors_total{resource=\"lease\",kind=\"forbidden\"} 0",
        "tart_kubelet_serving_csr_pending_since_seconds 0",
    ] {
        assert!(text.contains(name), "missing {name} in\n{text}");
    }
    assert!(!text.contains("unknown"), "old build_info series removed");
}
