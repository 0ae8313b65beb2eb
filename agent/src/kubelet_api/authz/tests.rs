use super::*;

#[test]
fn methods_map_to_kubelets_verbs() {
    let table = [
        (Method::GET, "get"),
        (Method::POST, "create"),
        (Method::PUT, "update"),
        (Method::PATCH, "patch"),
        (Method::DELETE, "delete"),
        (Method::HEAD, ""),
        (Method::OPTIONS, ""),
        (Method::TRACE, ""),
    ];
    for (m, want) in table {
        assert_eq!(verb_for(&m).as_str(), want, "{m}");
    }
}

#[test]
fn paths_map_to_kubelets_subresources() {
    let table = [
        ("/stats", "stats"),
        ("/stats/summary", "stats"),
        ("/statsfoo", "proxy"),
        ("/metrics", "metrics"),
        ("/metrics/resource", "metrics"),
        ("/metrics/cadvisor", "metrics"),
        ("/logs/", "log"),
        ("/logs/system.log", "log"),
        ("/spec/", "spec"),
        ("/checkpoint/ns/pod/c", "checkpoint"),
        ("/containerLogs/ns/pod/c", "proxy"),
        ("/exec/ns/pod/c", "proxy"),
        ("/attach/ns/pod/c", "proxy"),
        ("/portForward/ns/pod", "proxy"),
        ("/run/ns/pod/c", "proxy"),
        ("/pods", "proxy"),
        ("/healthz", "proxy"),
        ("/", "proxy"),
    ];
    for (path, want) in table {
        assert_eq!(subresource_for(path).as_str(), want, "{path}");
    }
}

#[test]
fn streaming_paths_need_create_whatever_the_method() {
    for path in [
        "/exec/n/p/c",
        "/attach/n/p/c",
        "/portForward/n/p",
        "/run/n/p/c",
    ] {
        assert_eq!(
            required(&Method::GET, path),
            (Verb::Create, Subresource::Proxy)
        );
    }
    assert_eq!(
        required(&Method::GET, "/executor"),
        (Verb::Get, Subresource::Proxy)
    );
    assert_eq!(
        required(&Method::GET, "/containerLogs/n/p/c"),
        (Verb::Get, Subresource::Proxy)
    );
    assert_eq!(
        required(&Method::HEAD, "/healthz"),
        (Verb::None, Subresource::Proxy)
    );
}

#[test]
fn refusals_use_kubelets_wording() {
    assert_eq!(
        forbidden_message("bob", Verb::Get, Subresource::Proxy),
        "Forbidden (user=bob, verb=get, resource=nodes, subresource=proxy)"
    );
    assert_eq!(
        review_failed_message("bob", Verb::None, Subresource::Stats),
        "Authorization error (user=bob, verb=, resource=nodes, subresource=stats)"
    );
}
