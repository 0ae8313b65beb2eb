use super::*;

/// One audit line as the API server writes it (level Metadata).
fn line(user: &str, verb: &str, obj: &str, received: &str, completed: &str) -> String {
    format!(
        r#"{{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"x","stage":"ResponseComplete","requestURI":"/api","verb":"{verb}","user":{{"username":"{user}","groups":["g"]}},"objectRef":{obj},"responseStatus":{{"metadata":{{}},"code":200}},"requestReceivedTimestamp":"{received}","stageTimestamp":"{completed}"}}"#
    )
}

fn pod(name: &str, sub: &str) -> String {
    format!(
        r#"{{"resource":"pods","namespace":"sandbox","name":"{name}","subresource":"{sub}","apiVersion":"v1"}}"#
    )
}

const AGENTS: &str = "tart-kubelet-sandbox";

fn log() -> String {
    [
        // Before the window.
        line(AGENTS, "update", r#"{"resource":"leases"}"#, "2026-11-27T10:00:00.000000Z", "2026-11-27T10:00:00.001000Z"),
        line("system:kube-scheduler", "create", &pod("a", "binding"), "2026-11-27T10:00:01.000000Z", "2026-11-27T10:00:01.010000Z"),
        line(AGENTS, "patch", &pod("a", ""), "2026-11-27T10:00:01.030000Z", "2026-11-27T10:00:01.040000Z"),
        line(AGENTS, "patch", &pod("a", "status"), "2026-11-27T10:00:02.000000Z", "2026-11-27T10:00:02.001000Z"),
        line("system:kube-scheduler", "create", &pod("b", "binding"), "2026-11-27T10:00:05.000000Z", "2026-11-27T10:00:05.002000Z"),
        // A Pod the agent never touched, and one in another namespace.
        line("system:kube-scheduler", "create", &pod("c", "binding"), "2026-11-27T10:00:06.000000Z", "2026-11-27T10:00:06.002000Z"),
        line(AGENTS, "patch", &pod("b", ""), "2026-11-27T10:00:05.102000Z", "2026-11-27T10:00:05.110000Z"),
        // A second binding of b, refused: not b's binding.
        line("system:kube-scheduler", "create", &pod("b", "binding"), "2026-11-27T10:00:05.500000Z", "2026-11-27T10:00:05.600000Z").replace("\"code\":200", "\"code\":409"),
        line("admin", "list", r#"{"resource":"pods","namespace":"sandbox"}"#, "2026-11-27T10:00:07.000000Z", "2026-11-27T10:00:07.010000Z"),
        line("system:kube-controller-manager", "get", r#"{"resource":"nodes","name":"n"}"#, "2026-11-27T10:00:08.000000Z", "2026-11-27T10:00:08.010000Z"),
        line("someone", "watch", r#"{"resource":"nodes"}"#, "2026-11-27T10:00:09.000000Z", "2026-11-27T10:00:09.010000Z"),
        "not json".to_string(),
        r#"{"stage":"Panic","verb":"get","user":{"username":"x"},"requestReceivedTimestamp":"2026-11-27T10:00:09.500000Z","stageTimestamp":"2026-11-27T10:00:09.500000Z"}"#.to_string(),
        // After the window.
        line(AGENTS, "update", r#"{"resource":"leases"}"#, "2026-11-27T10:00:10.000000Z", "2026-11-27T10:00:10.001000Z"),
    ]
    .join("\n")
}

fn window() -> Vec<Event> {
    events(
        &log(),
        "2026-11-27T10:00:01.000000Z",
        "2026-11-27T10:00:10.000000Z",
    )
}

#[test]
fn events_are_the_completed_ones_received_in_the_window() {
    let e = window();
    assert_eq!(e.len(), 10, "{e:#?}");
    assert!(
        e.iter()
            .all(|e| e.request_received_timestamp.as_str() >= "2026-11-27T10:00:01")
    );
}

#[test]
fn load_counts_by_verb_and_by_user_per_second_of_the_window() {
    let l = load(&window(), 10.0, AGENTS, 3);
    assert!((l.requests_per_second - 1.0).abs() < 1e-9, "{l:?}");
    let get = |m: &BTreeMap<String, f64>, k: &str| m.get(k).copied().unwrap_or(0.0) * 10.0;
    assert_eq!(get(&l.by_verb, "create"), 4.0);
    assert_eq!(get(&l.by_verb, "patch"), 3.0);
    assert_eq!(get(&l.by_verb, "list"), 1.0);
    assert_eq!(get(&l.by_user, "agents"), 3.0);
    assert_eq!(get(&l.by_user, "scheduler"), 4.0);
    assert_eq!(get(&l.by_user, "sandbox"), 1.0);
    assert_eq!(get(&l.by_user, "controller_manager"), 1.0);
    assert_eq!(get(&l.by_user, "other"), 1.0);
    assert_eq!(get(&l.agents_by_verb, "patch"), 3.0);
    assert_eq!(l.agents_by_verb.len(), 1);
    // 3 requests in 10 s by 3 nodes: 18 a minute, 6 each.
    assert!((l.agents_per_node_per_minute - 6.0).abs() < 1e-9);
    // Seconds 1..9 hold the 10 requests; the busiest 9-second span (shorter than 10 s) has all.
    assert!(
        (l.peak_requests_per_second_10s - 10.0 / 9.0).abs() < 1e-9,
        "{l:?}"
    );
}

#[test]
fn the_peak_is_the_busiest_ten_seconds() {
    let mut per_second = HashMap::new();
    per_second.insert(0, 5);
    per_second.insert(3, 95);
    per_second.insert(25, 10);
    assert!((peak_10s(&per_second) - 10.0).abs() < 1e-9);
    assert_eq!(peak_10s(&HashMap::new()), 0.0);
}

#[test]
fn watch_delay_is_binding_completed_to_the_agents_first_request_for_the_pod() {
    let d = watch_delays(&window(), "sandbox", AGENTS);
    // a: bound 01.010, first patch 01.030; b: bound 05.002, first patch 05.102; c: never.
    assert_eq!(d.len(), 2, "{d:?}");
    assert!((d[0] - 0.020).abs() < 1e-9, "{d:?}");
    assert!((d[1] - 0.100).abs() < 1e-9, "{d:?}");
    assert!(watch_delays(&window(), "other", AGENTS).is_empty());
}

#[test]
fn stamps_are_in_the_logs_own_format_so_they_compare_with_its_times() {
    let t: Timestamp = "2026-11-27T10:00:01.5Z".parse().unwrap();
    assert_eq!(stamp(t), "2026-11-27T10:00:01.500000Z");
    let e = events(&log(), &stamp(t), "2026-11-27T10:00:06.000000Z");
    // a's status patch at 02.000; b's binding at 05.000, its refused one at 05.500 and its
    // patch at 05.102.
    assert_eq!(e.len(), 4, "{e:#?}");
}
