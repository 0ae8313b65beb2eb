use futures::{FutureExt, future::BoxFuture};
use http_body_util::Empty;
use k8s_openapi::api::core::v1::Pod;

use bytes::Bytes;

use super::*;
use crate::kubelet_api::{
    gate::Gate,
    limits::{Limit, Slots},
    logs::memory::MemoryLogs,
    review::{AccessRequest, ReviewError, Reviewer},
    scrape::Scrape,
    stream::{ExecSource, guest::ExecError},
};

/// Token `admin` is user admin, allowed everything; token `viewer` is allowed nothing.
struct Mock;

impl Reviewer for Mock {
    fn review_token(
        &self,
        token: String,
    ) -> BoxFuture<'static, Result<Option<UserInfo>, ReviewError>> {
        let user = ["admin", "viewer"]
            .contains(&token.as_str())
            .then(|| UserInfo::new(token, String::new(), vec![]));
        async move { Ok(user) }.boxed()
    }

    fn review_access(&self, req: AccessRequest) -> BoxFuture<'static, Result<bool, ReviewError>> {
        async move { Ok(req.user.name == "admin") }.boxed()
    }
}

fn api() -> Arc<Api> {
    api_with_follows(4)
}

fn api_with_follows(follows: usize) -> Arc<Api> {
    api_with(follows, None)
}

fn api_with(follows: usize, scrape: Option<Scrape>) -> Arc<Api> {
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "p1", "namespace": "ns"},
        "spec": {"containers": [{"name": "c", "image": "img"}]}
    }))
    .unwrap();
    Arc::new(Api {
        gate: Gate::new("mac-1".into(), Arc::new(Mock)),
        pods: Arc::new(move || vec![Arc::new(pod.clone())]),
        logs: Arc::new(MemoryLogs::default().with("ns", "p1", "c", &["one", "two", "three"])),
        exec: None,
        exec_metrics: Default::default(),
        stats: None,
        scrape,
        streams: Slots::new(4, Limit::Streams, Default::default()),
        follows: Slots::new(follows, Limit::LogFollows, Default::default()),
        timeouts: Default::default(),
    })
}

async fn call(method: &str, uri: &str, token: Option<&str>) -> (u16, String) {
    let mut req = Request::builder().method(method).uri(uri);
    if let Some(t) = token {
        req = req.header("Authorization", format!("Bearer {t}"));
    }
    let resp = handle(api(), None, req.body(Empty::<Bytes>::new()).unwrap()).await;
    let status = resp.status().as_u16();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

#[tokio::test]
async fn anonymous_requests_get_401_even_for_healthz() {
    assert_eq!(
        call("GET", "/healthz", None).await,
        (401, "Unauthorized".into())
    );
    assert_eq!(call("GET", "/nowhere", None).await.0, 401);
}

#[tokio::test]
async fn a_user_without_rights_gets_403() {
    assert_eq!(
        call("GET", "/pods", Some("viewer")).await,
        (
            403,
            "Forbidden (user=viewer, verb=get, resource=nodes, subresource=proxy)".into()
        )
    );
}

#[tokio::test]
async fn healthz_and_pods_answer_like_kubelet() {
    assert_eq!(
        call("GET", "/healthz", Some("admin")).await,
        (200, "ok".into())
    );
    let (status, body) = call("GET", "/pods", Some("admin")).await;
    assert_eq!(status, 200);
    let list: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(list["kind"], "PodList");
    assert_eq!(list["apiVersion"], "v1");
    assert_eq!(list["items"][0]["metadata"]["name"], "p1");
}

#[tokio::test]
async fn container_logs_stream_from_the_log_source_with_the_query_applied() {
    assert_eq!(
        call("GET", "/containerLogs/ns/p1/c", Some("admin")).await,
        (200, "one\ntwo\nthree\n".into())
    );
    assert_eq!(
        call("GET", "/containerLogs/ns/p1/c?tailLines=2", Some("admin")).await,
        (200, "two\nthree\n".into())
    );
}

#[tokio::test]
async fn log_errors_carry_kubelets_status_and_text() {
    let table = [
        ("/containerLogs/ns/p2/c", 404, r#"pod "p2" does not exist"#),
        (
            "/containerLogs/ns/p1/d",
            404,
            r#"container "d" not found in pod "p1""#,
        ),
        (
            "/containerLogs/ns/p1/c?tailLines=-1",
            422,
            r#"{"message":"Invalid request: tailLines: Invalid value: -1: must be greater than or equal to 0"}"#,
        ),
        (
            "/containerLogs/ns/p1/c?limitBytes=x",
            400,
            r#"{"message": "Unable to decode query."}"#,
        ),
    ];
    for (uri, status, body) in table {
        assert_eq!(
            call("GET", uri, Some("admin")).await,
            (status, body.into()),
            "{uri}"
        );
    }
}

#[tokio::test]
async fn streaming_paths_say_not_implemented_and_others_404() {
    let (status, body) = call("POST", "/exec/ns/p1/c?command=ls&output=1", Some("admin")).await;
    assert_eq!(
        call("GET", "/attach/ns/p1/c?output=1", Some("admin"))
            .await
            .0,
        501
    );
    assert_eq!(status, 501);
    assert!(body.contains("exec is not implemented yet"), "{body}");
    assert_eq!(
        call("GET", "/portForward/ns/p1", Some("admin")).await.0,
        501
    );
    assert_eq!(call("GET", "/stats/summary", Some("admin")).await.0, 404);
    assert_eq!(call("GET", "/metrics", Some("admin")).await.0, 404);
    assert_eq!(call("POST", "/pods", Some("admin")).await.0, 405);
}

/// Pod `ns/p1` container `c` runs in VM `vm-1`; everything else is not found.
struct OneVm;

impl ExecSource for OneVm {
    fn running_vm(&self, t: &ExecTarget) -> Result<tart::VmName, ExecError> {
        match (t.namespace.as_str(), t.pod.as_str(), t.container.as_str()) {
            ("ns", "p1", "c") => Ok(tart::VmName::new("vm-1").unwrap()),
            ("ns", "p1", other) => Err(ExecError::ContainerNotFound(other.into())),
            _ => Err(ExecError::PodNotFound),
        }
    }

    fn guest_ip(
        &self,
        _namespace: &str,
        _pod: &str,
        _uid: Option<&str>,
    ) -> Result<std::net::IpAddr, ExecError> {
        Err(ExecError::PodNotFound)
    }

    fn start(
        &self,
        _vm: tart::VmName,
        _argv: Vec<String>,
        _opts: tart::ExecOpts,
    ) -> BoxFuture<'static, tart::Result<tart::ExecSession>> {
        unreachable!("no upgrade happens in these tests")
    }
}

async fn exec_call(uri: &str, headers: &[(&str, &str)]) -> (u16, serde_json::Value) {
    let mut api = Arc::try_unwrap(api()).ok().unwrap();
    api.exec = Some(Arc::new(OneVm));
    let mut req = Request::builder()
        .method("POST")
        .uri(uri)
        .header("Authorization", "Bearer admin");
    for (n, v) in headers {
        req = req.header(*n, *v);
    }
    let resp = handle(
        Arc::new(api),
        None,
        req.body(Empty::<Bytes>::new()).unwrap(),
    )
    .await;
    let status = resp.status().as_u16();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    let text = String::from_utf8_lossy(&body).into_owned();
    let v = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{status} {text:?}: {e}"));
    (status, v)
}

const SPDY: [(&str, &str); 3] = [
    ("Connection", "Upgrade"),
    ("Upgrade", "SPDY/3.1"),
    ("X-Stream-Protocol-Version", "v4.channel.k8s.io"),
];

/// kubectl's WebSocket attempt; past every check it is upgraded (here: it cannot be, in memory).
const WS: [(&str, &str); 5] = [
    ("Connection", "Upgrade"),
    ("Upgrade", "websocket"),
    ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
    ("Sec-WebSocket-Version", "13"),
    ("Sec-WebSocket-Protocol", "v5.channel.k8s.io"),
];

#[tokio::test]
async fn exec_is_checked_before_any_upgrade_and_refused_as_a_status() {
    type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], u16, &'a str);
    let table: [Case<'_>; 8] = [
        (
            "/exec/ns/p1/c?output=1",
            &SPDY,
            400,
            "you must specify a command",
        ),
        (
            "/exec/ns/p1/c?command=ls",
            &SPDY,
            400,
            "you must specify at least 1 of stdin, stdout, stderr",
        ),
        (
            "/exec/ns/p2/c?command=ls&output=1",
            &SPDY,
            404,
            "pod does not exist",
        ),
        (
            "/exec/ns/p1/db?command=ls&output=1",
            &SPDY,
            404,
            "container not found (\"db\")",
        ),
        (
            "/exec/ns/p1/c?command=ls&output=1",
            &[],
            400,
            "unable to upgrade: missing upgrade headers in request",
        ),
        (
            "/exec/ns/p1/c?command=ls&output=1",
            &[("Connection", "Upgrade"), ("Upgrade", "websocket")],
            400,
            "missing Sec-WebSocket-Key",
        ),
        (
            "/exec/ns/p1/c?command=ls&output=1",
            &[
                ("Connection", "Upgrade"),
                ("Upgrade", "websocket"),
                ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
                ("Sec-WebSocket-Version", "13"),
                ("Sec-WebSocket-Protocol", "SPDY/3.1+portforward.k8s.io"),
            ],
            403,
            "unable to upgrade: requested protocol(s) are not supported",
        ),
        (
            "/exec/ns/p1/c?command=ls&output=1",
            &WS,
            500,
            "this connection cannot be upgraded",
        ),
    ];
    for (uri, headers, status, message) in table {
        let (got, body) = exec_call(uri, headers).await;
        assert_eq!(
            (got, body["message"].as_str()),
            (status, Some(message)),
            "{uri} {headers:?}"
        );
        assert_eq!(body["kind"], "Status");
    }
}

#[tokio::test]
async fn a_spdy_request_that_cannot_be_upgraded_is_an_internal_error_not_a_hang() {
    // A request built in memory carries no upgrade handle.
    let (status, body) = exec_call("/exec/ns/p1/c?command=ls&output=1", &SPDY).await;
    assert_eq!(status, 500, "{body}");
}

#[tokio::test]
async fn attach_is_checked_before_any_upgrade_and_stdin_is_refused_with_the_reason() {
    type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], u16, &'a str);
    let table: [Case<'_>; 5] = [
        (
            "/attach/ns/p1/c?tty=1",
            &SPDY,
            400,
            "you must specify at least 1 of stdin, stdout, stderr",
        ),
        ("/attach/ns/p2/c?output=1", &SPDY, 404, "pod does not exist"),
        (
            "/attach/ns/p1/db?output=1",
            &SPDY,
            404,
            "container not found (\"db\")",
        ),
        (
            "/attach/ns/p1/c?input=1&output=1",
            &SPDY,
            400,
            "stdin is not enabled for container \"c\" (the Pod does not set `stdin: true`); \
             attach without -i to follow its output",
        ),
        (
            "/attach/ns/p1/c?output=1",
            &[],
            400,
            "unable to upgrade: missing upgrade headers in request",
        ),
    ];
    for (uri, headers, status, message) in table {
        let (got, body) = exec_call(uri, headers).await;
        assert_eq!(
            (got, body["message"].as_str()),
            (status, Some(message)),
            "{uri} {headers:?}"
        );
    }
    // Past every check: the job's output is opened from its end, then the upgrade.
    let (status, body) = exec_call("/attach/ns/p1/c?output=1&error=1", &SPDY).await;
    assert_eq!(status, 500, "{body}");
}

#[tokio::test]
async fn followed_logs_over_the_cap_get_429_until_one_ends() {
    let api = api_with_follows(1);
    let follow = || {
        Request::builder()
            .uri("/containerLogs/ns/p1/c?follow=true")
            .header("Authorization", "Bearer admin")
            .body(Empty::<Bytes>::new())
            .unwrap()
    };
    let first = handle(api.clone(), None, follow()).await;
    assert_eq!(first.status(), 200);
    let second = handle(api.clone(), None, follow()).await;
    assert_eq!(second.status(), 429);
    let body = second.into_body().collect().await.unwrap().to_bytes();
    assert!(
        String::from_utf8_lossy(&body).contains("too many followed logs"),
        "{body:?}"
    );
    // A log that is not followed is not capped.
    let once = Request::builder()
        .uri("/containerLogs/ns/p1/c")
        .header("Authorization", "Bearer admin")
        .body(Empty::<Bytes>::new())
        .unwrap();
    assert_eq!(handle(api.clone(), None, once).await.status(), 200);
    drop(first);
    assert_eq!(handle(api, None, follow()).await.status(), 200);
}

#[tokio::test]
async fn metrics_paths_serve_kubelets_series_in_the_text_format() {
    let mut reg = prometheus_client::registry::Registry::default();
    let process = crate::metrics::process::ProcessMetrics::register(&mut reg);
    let scrape = Scrape {
        node_name: "mac-1".into(),
        registry: Arc::new(reg),
        process,
        probes: Default::default(),
    };
    let api = api_with(4, Some(scrape));
    let get = |path: &'static str| {
        let api = api.clone();
        async move {
            let req = Request::builder()
                .uri(path)
                .header("Authorization", "Bearer admin")
                .body(Empty::<Bytes>::new())
                .unwrap();
            let resp = handle(api, None, req).await;
            let status = resp.status().as_u16();
            let ct = resp.headers()["content-type"].to_str().unwrap().to_owned();
            let body = resp.into_body().collect().await.unwrap().to_bytes();
            (status, ct, String::from_utf8_lossy(&body).into_owned())
        }
    };
    let (status, ct, body) = get("/metrics").await;
    assert_eq!(
        (status, ct.as_str()),
        (200, crate::metrics::PROMETHEUS_TEXT)
    );
    assert!(
        body.contains("kubelet_node_name{node=\"mac-1\"} 1"),
        "{body}"
    );
    assert!(body.contains("process_cpu_seconds_total"), "{body}");
    let (status, _, body) = get("/metrics/probes").await;
    assert_eq!(status, 200);
    assert!(body.contains("# TYPE prober_probe_total counter"), "{body}");
    // No stats source: cAdvisor's series cannot be known, so the path is not there.
    assert_eq!(get("/metrics/cadvisor").await.0, 404);
}
