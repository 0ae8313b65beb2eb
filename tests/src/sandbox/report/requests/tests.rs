use super::*;

fn line(user: &str, verb: &str, object: &str, at: &str) -> String {
    format!(
        r#"{{"stage":"ResponseComplete","verb":"{verb}","user":{{"username":"{user}"}},"objectRef":{object},"requestReceivedTimestamp":"{at}"}}"#
    )
}

fn log() -> String {
    let a = "tart-kubelet-sandbox";
    [
        line(a, "update", r#"{"resource":"leases","namespace":"kube-node-lease","name":"m1"}"#, "2026-01-01T00:00:01.000000Z"),
        line(a, "update", r#"{"resource":"leases","namespace":"kube-node-lease","name":"m1"}"#, "2026-01-01T00:00:11.000000Z"),
        line(a, "watch", r#"{"resource":"pods"}"#, "2026-01-01T00:00:02.000000Z"),
        line(a, "patch", r#"{"resource":"nodes","name":"m1","subresource":"status"}"#, "2026-01-01T00:00:05.000000Z"),
        line(a, "get", r#"{"resource":"configmaps","namespace":"tart-kubelet","name":"tart-kubelet-prepull"}"#, "2026-01-01T00:00:06.000000Z"),
        // Someone else's request, and one that is not complete yet.
        line("admin", "get", r#"{"resource":"pods","namespace":"p1","name":"x"}"#, "2026-01-01T00:00:07.000000Z"),
        r#"{"stage":"ResponseStarted","verb":"watch","user":{"username":"tart-kubelet-sandbox"},"objectRef":{"resource":"nodes"},"requestReceivedTimestamp":"2026-01-01T00:00:03.000000Z"}"#.into(),
        // A lifecycle in namespace p1, after the idle window.
        line(a, "patch", r#"{"resource":"pods","namespace":"p1","name":"x"}"#, "2026-01-01T00:01:00.000000Z"),
        line(a, "patch", r#"{"resource":"pods","namespace":"p1","name":"x","subresource":"status"}"#, "2026-01-01T00:01:01.000000Z"),
        line(a, "patch", r#"{"resource":"pods","namespace":"p1","name":"x","subresource":"status"}"#, "2026-01-01T00:01:02.000000Z"),
        line(a, "create", r#"{"resource":"events","namespace":"p1"}"#, "2026-01-01T00:01:02.000000Z"),
        line(a, "get", r#"{"resource":"configmaps","namespace":"p1","name":"kube-root-ca.crt"}"#, "2026-01-01T00:01:03.000000Z"),
        line(a, "create", r#"{"resource":"serviceaccounts","namespace":"p1","name":"default","subresource":"token"}"#, "2026-01-01T00:01:03.000000Z"),
        line(a, "patch", r#"{"resource":"nodes","name":"m1","subresource":"status"}"#, "2026-01-01T00:01:04.000000Z"),
        line(a, "update", r#"{"resource":"leases","namespace":"kube-node-lease","name":"m1"}"#, "2026-01-01T00:01:05.000000Z"),
        line(a, "delete", r#"{"resource":"pods","namespace":"p1","name":"x"}"#, "2026-01-01T00:01:09.000000Z"),
    ]
    .join("\n")
}

#[test]
fn the_idle_window_counts_the_agents_completed_requests_and_leaves_watches_out_of_the_rate() {
    let reqs = parse(&log());
    let idle = idle(
        &reqs,
        "tart-kubelet-sandbox",
        "2026-01-01T00:00:00.000000Z",
        "2026-01-01T00:00:30.000000Z",
        0.5,
    );
    assert_eq!(idle.breakdown.requests, 5);
    assert_eq!(idle.breakdown.watches, 1);
    assert!((idle.per_minute_without_watches - 8.0).abs() < 1e-9);
    let first = &idle.breakdown.rows[0];
    assert_eq!((first.verb.as_str(), first.count), ("update", 2));
    assert_eq!(first.purpose, Purpose::LeaseRenewal);
    let purposes: Vec<Purpose> = idle.breakdown.rows.iter().map(|r| r.purpose).collect();
    assert!(purposes.contains(&Purpose::PrepullDeclaration));
    assert!(purposes.contains(&Purpose::PodWatch));
}

#[test]
fn a_lifecycle_is_its_namespace_plus_the_node_status_writes_of_its_window() {
    let reqs = parse(&log());
    let b = lifecycle(
        &reqs,
        "tart-kubelet-sandbox",
        "p1",
        "2026-01-01T00:00:59.000000Z",
        "2026-01-01T00:01:10.000000Z",
    );
    // Not the admin's get, not the Lease renewal of the window.
    assert_eq!(b.requests, 8);
    let count = |p: Purpose| {
        b.rows
            .iter()
            .filter(|r| r.purpose == p)
            .map(|r| r.count)
            .sum::<u64>()
    };
    assert_eq!(count(Purpose::PodStatus), 2);
    assert_eq!(count(Purpose::PodFinalizer), 1);
    assert_eq!(count(Purpose::PodDelete), 1);
    assert_eq!(count(Purpose::Event), 1);
    assert_eq!(count(Purpose::RootCa), 1);
    assert_eq!(count(Purpose::Token), 1);
    assert_eq!(count(Purpose::NodeStatus), 1);
    assert_eq!(count(Purpose::LeaseRenewal), 0);
    let mut text = String::new();
    render(
        &mut text,
        &ApiAccounting {
            idle: Idle::default(),
            lifecycles: vec![Lifecycle {
                pod: "runner".into(),
                shape: "Secret env, token volume".into(),
                seconds: 10.0,
                breakdown: b,
            }],
        },
    );
    assert!(text.contains("pods/status"), "{text}");
    assert!(text.contains("service-account token requested"), "{text}");
}
