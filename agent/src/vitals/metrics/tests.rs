use super::*;

#[test]
fn every_series_is_exported_under_its_agreed_name() {
    let mut reg = Registry::default();
    let m = VitalsMetrics::register(&mut reg);
    m.pressure_level.set(4);
    m.vms_cpu_cores.set(1.5);
    m.death(DeathCause::OomKilled);
    m.sample(Source::Guest, false);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &reg).unwrap();
    for line in [
        "tart_kubelet_host_memory_pressure_level 4",
        "tart_kubelet_host_memory_free_percent 0",
        "tart_kubelet_host_swap_used_bytes 0",
        "tart_kubelet_vms_cpu_usage_cores 1.5",
        "tart_kubelet_vms_memory_resident_bytes 0",
        "tart_kubelet_vitals_samples_total{source=\"guest\",result=\"error\"} 1",
        "tart_kubelet_vitals_samples_total{source=\"host\",result=\"ok\"} 0",
        "tart_kubelet_vm_deaths_total{cause=\"oom_killed\"} 1",
        "tart_kubelet_vm_deaths_total{cause=\"job_error\"} 0",
    ] {
        assert!(text.contains(line), "missing {line} in\n{text}");
    }
}
