use futures::{FutureExt, future::BoxFuture};
use http_body_util::Empty;
use k8s_openapi::api::core::v1::Pod;

use super::*;
use crate::kubelet_api::{
    logs::memory::MemoryLogs,
    review::{AccessRequest, ReviewError, Reviewer},
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
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "p1", "namespace": "ns"},
        "spec": {"containers": [{"name": "c", "image": "img"}]}
    }))
    .unwrap();
    Arc::new(Api {
        gate: Gate::new("mac-1".into(), Arc::new(Mock)),
        pods: Arc::new(move || vec![pod.clone()]),
        logs: Arc::new(MemoryLogs::default().with("ns", "p1", "c", &["one", "two", "three"])),
        exec: None,
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
    assert_eq!(status, 501);
    assert!(body.contains("exec is not implemented yet"), "{body}");
    assert_eq!(
        call("GET", "/portForward/ns/p1", Some("admin")).await.0,
        501
    );
    assert_eq!(call("GET", "/stats/summary", Some("admin")).await.0, 404);
    assert_eq!(call("POST", "/pods", Some("admin")).await.0, 405);
}
