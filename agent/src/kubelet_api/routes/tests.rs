use super::*;

#[test]
fn paths_route_to_their_handlers() {
    let logs = Route::ContainerLogs {
        namespace: "ns",
        pod: "p",
        container: "c",
    };
    let table = [
        (Method::GET, "/healthz", Route::Healthz),
        (Method::GET, "/pods", Route::Pods),
        (Method::GET, "/pods/", Route::Pods),
        (Method::GET, "/stats/summary", Route::StatsSummary),
        (Method::GET, "/stats/summary/", Route::StatsSummary),
        (Method::GET, "/metrics/resource", Route::MetricsResource),
        (Method::POST, "/metrics/resource", Route::MethodNotAllowed),
        (Method::GET, "/metrics", Route::Metrics),
        (Method::GET, "/metrics/cadvisor", Route::MetricsCadvisor),
        (Method::GET, "/metrics/probes", Route::MetricsProbes),
        (Method::POST, "/metrics/probes", Route::MethodNotAllowed),
        (Method::GET, "/metrics/cadvisor/x", Route::NotFound),
        (Method::GET, "/containerLogs/ns/p/c", logs),
        (Method::GET, "/containerLogs/ns/p", Route::NotFound),
        (Method::GET, "/containerLogs/ns//c", Route::NotFound),
        (Method::GET, "/containerLogs/ns/p/c/x", Route::NotFound),
        (
            Method::POST,
            "/exec/ns/p/c",
            Route::Exec {
                namespace: "ns",
                pod: "p",
                uid: None,
                container: "c",
            },
        ),
        (
            Method::GET,
            "/exec/ns/p/uid/c",
            Route::Exec {
                namespace: "ns",
                pod: "p",
                uid: Some("uid"),
                container: "c",
            },
        ),
        (Method::PUT, "/exec/ns/p/c", Route::MethodNotAllowed),
        (Method::POST, "/exec/ns/p", Route::NotFound),
        (Method::POST, "/exec/ns//c", Route::NotFound),
        (Method::POST, "/exec/ns/p/u/c/x", Route::NotFound),
        (
            Method::GET,
            "/attach/ns/p/c",
            Route::Attach {
                namespace: "ns",
                pod: "p",
                uid: None,
                container: "c",
            },
        ),
        (
            Method::POST,
            "/attach/ns/p/u/c",
            Route::Attach {
                namespace: "ns",
                pod: "p",
                uid: Some("u"),
                container: "c",
            },
        ),
        (Method::DELETE, "/attach/ns/p/c", Route::MethodNotAllowed),
        (Method::GET, "/attach/ns/p", Route::NotFound),
        (
            Method::POST,
            "/portForward/ns/p",
            Route::PortForward {
                namespace: "ns",
                pod: "p",
                uid: None,
            },
        ),
        (
            Method::GET,
            "/portForward/ns/p/u",
            Route::PortForward {
                namespace: "ns",
                pod: "p",
                uid: Some("u"),
            },
        ),
        (Method::DELETE, "/portForward/ns/p", Route::MethodNotAllowed),
        (Method::POST, "/portForward/ns", Route::NotFound),
        (
            Method::POST,
            "/run/ns/p/c",
            Route::Streaming(Streaming::Run),
        ),
        (Method::GET, "/exec/ns", Route::NotFound),
        (Method::GET, "/", Route::NotFound),
        (Method::POST, "/healthz", Route::MethodNotAllowed),
        (Method::DELETE, "/pods", Route::MethodNotAllowed),
        (
            Method::PUT,
            "/containerLogs/ns/p/c",
            Route::MethodNotAllowed,
        ),
    ];
    for (m, path, want) in table {
        assert_eq!(route(&m, path), want, "{m} {path}");
    }
}
