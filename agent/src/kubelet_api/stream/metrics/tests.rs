use super::*;

#[test]
fn every_exec_metric_is_exposed() {
    let mut reg = Registry::default();
    let m = ExecMetrics::register(&mut reg);
    let clock = SessionClock::since(Instant::now(), m.clone());
    clock.spawned();
    clock.status_written();
    clock.ended(SessionOutcome::NonzeroExit);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &reg).unwrap();
    for line in [
        "tart_kubelet_exec_sessions_total{outcome=\"ok\"} 0",
        "tart_kubelet_exec_sessions_total{outcome=\"nonzero_exit\"} 1",
        "tart_kubelet_exec_sessions_total{outcome=\"client_gone\"} 0",
        "tart_kubelet_exec_session_seconds_count 1",
        "tart_kubelet_exec_setup_seconds_count 1",
    ] {
        assert!(text.contains(line), "missing {line} in\n{text}");
    }
}
