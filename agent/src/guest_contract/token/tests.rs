//! TokenRequest against a mocked API server (method, path, body; the answer parsed; refusals,
//! deadline and undecodable answers), kubelet's refresh rule as a table, and the token kept out
//! of Debug, error messages and log lines.

use std::{
    io,
    sync::{Arc, Mutex},
    time::Duration,
};

use http::{Method, Request, Response, StatusCode};
use k8s_openapi::jiff::Timestamp;
use kube::{Client, client::Body};
use serde_json::{Value, json};
use tokio::time::timeout;
use tower_test::mock::{self, Handle, SendResponse};

use super::*;
use crate::guest_contract::model::TokenSpec;

const WAIT: Duration = Duration::from_secs(2);
const PATH: &str = "/api/v1/namespaces/ci/serviceaccounts/build/token";
const SECRET: &str = "eyJhbGciOiJSUzI1NiJ9.c2VjcmV0LXBheWxvYWQ.c2lnbmF0dXJl";

type ApiHandle = Handle<Request<Body>, Response<Body>>;

fn api() -> (Client, ApiHandle) {
    let (svc, handle) = mock::pair::<Request<Body>, Response<Body>>();
    (Client::new(svc, "default"), handle)
}

fn spec(audience: Option<&str>, seconds: i64) -> TokenSpec {
    TokenSpec {
        audience: audience.map(str::to_owned),
        expiration_seconds: seconds,
    }
}

/// The one request made: method, path, JSON body, and where to answer it.
async fn next_call(
    handle: &mut ApiHandle,
) -> (Method, String, Value, SendResponse<Response<Body>>) {
    let (req, reply) = timeout(WAIT, handle.next_request())
        .await
        .expect("no request was made")
        .expect("the client is gone");
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    let bytes = req.into_body().collect_bytes().await.unwrap();
    (method, path, serde_json::from_slice(&bytes).unwrap(), reply)
}

fn answer(reply: SendResponse<Response<Body>>, code: StatusCode, body: &Value) {
    let bytes = serde_json::to_vec(body).unwrap();
    reply.send_response(
        Response::builder()
            .status(code)
            .body(Body::from(bytes))
            .unwrap(),
    );
}

fn issued_answer(request: &Value, expires: &str) -> Value {
    json!({
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "metadata": {"name": "build", "namespace": "ci"},
        "spec": request["spec"],
        "status": {"token": SECRET, "expirationTimestamp": expires},
    })
}

fn status(code: u16, reason: &str, message: &str) -> Value {
    json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason, "code": code,
    })
}

/// Run `request_token` for Pod `ci/runner` and SA `build` while `serve` answers.
async fn request_with<F, Fut>(spec: TokenSpec, serve: F) -> Result<IssuedToken, TokenError>
where
    F: FnOnce(ApiHandle) -> Fut,
    Fut: Future<Output = ApiHandle>,
{
    let (client, handle) = api();
    let run = tokio::spawn(async move {
        request_token(&client, "ci", "build", "runner", "uid-1", &spec, WAIT).await
    });
    let _handle = serve(handle).await;
    timeout(WAIT * 2, run)
        .await
        .expect("request_token did not finish")
        .unwrap()
}

fn at(s: &str) -> Timestamp {
    s.parse().unwrap()
}

#[tokio::test]
async fn the_request_binds_the_pod_and_clamps_the_lifetime_to_600s() {
    let got = request_with(spec(Some("vault"), 300), |mut h| async move {
        let (method, path, body, reply) = next_call(&mut h).await;
        assert_eq!(method, Method::POST);
        assert_eq!(path, PATH);
        assert_eq!(body["apiVersion"], "authentication.k8s.io/v1");
        assert_eq!(body["kind"], "TokenRequest");
        assert_eq!(
            body["spec"],
            json!({
                "audiences": ["vault"],
                "expirationSeconds": 600,
                "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "runner", "uid": "uid-1"},
            })
        );
        answer(reply, StatusCode::CREATED, &issued_answer(&body, "2026-01-01T00:10:00Z"));
        h
    })
    .await
    .unwrap();
    assert_eq!(got.token, SECRET);
    assert_eq!(got.expires_at, at("2026-01-01T00:10:00Z"));
    assert_eq!(got.issued_at, at("2026-01-01T00:00:00Z"));
}

#[tokio::test]
async fn no_audience_asks_for_the_api_servers_own() {
    for audience in [None, Some("")] {
        request_with(spec(audience, 3600), |mut h| async move {
            let (_, _, body, reply) = next_call(&mut h).await;
            assert_eq!(
                body["spec"]["audiences"],
                json!([]),
                "audience {audience:?}"
            );
            assert_eq!(body["spec"]["expirationSeconds"], 3600);
            answer(
                reply,
                StatusCode::CREATED,
                &issued_answer(&body, "2026-01-01T01:00:00Z"),
            );
            h
        })
        .await
        .unwrap();
    }
}

#[test]
fn the_lifetime_the_server_granted_dates_the_issue() {
    let answer: TokenRequest = serde_json::from_value(json!({
        "spec": {"expirationSeconds": 7200},
        "status": {"token": SECRET, "expirationTimestamp": "2026-01-01T02:00:00Z"},
    }))
    .unwrap();
    let t = issued(answer, 3600).unwrap();
    assert_eq!(t.issued_at, at("2026-01-01T00:00:00Z"));
}

#[tokio::test]
async fn refusals_keep_the_servers_message_and_a_closed_kind() {
    let cases = [
        (
            403,
            "Forbidden",
            "serviceaccounts \"build\" is forbidden",
            "forbidden",
        ),
        (
            404,
            "NotFound",
            "serviceaccounts \"build\" not found",
            "not_found",
        ),
        (500, "InternalError", "etcd is down", "other"),
    ];
    for (code, reason, message, kind) in cases {
        let err = request_with(spec(None, 3600), |mut h| async move {
            let (_, _, _, reply) = next_call(&mut h).await;
            let code = StatusCode::from_u16(code).unwrap();
            answer(reply, code, &status(code.as_u16(), reason, message));
            h
        })
        .await
        .unwrap_err();
        assert_eq!(err.kind(), kind, "{code}");
        assert_eq!(err.to_string(), message);
        assert!(TokenError::KINDS.contains(&err.kind()));
    }
}

#[tokio::test(start_paused = true)]
async fn no_answer_within_the_deadline_is_a_timeout() {
    let (client, mut handle) = api();
    let started = tokio::time::Instant::now();
    let run = tokio::spawn(async move {
        let s = spec(None, 3600);
        request_token(
            &client,
            "ci",
            "build",
            "runner",
            "uid-1",
            &s,
            Duration::from_secs(10),
        )
        .await
    });
    // Held unanswered, so the request stays in flight until the deadline.
    let (_req, _reply) = handle.next_request().await.unwrap();
    let err = run.await.unwrap().unwrap_err();
    assert_eq!(err, TokenError::Timeout);
    assert_eq!(err.kind(), "timeout");
    assert_eq!(started.elapsed(), Duration::from_secs(10));
}

#[tokio::test]
async fn an_answer_without_a_token_is_malformed() {
    let err = request_with(spec(None, 3600), |mut h| async move {
        let (_, _, body, reply) = next_call(&mut h).await;
        let mut a = issued_answer(&body, "2026-01-01T01:00:00Z");
        a["status"]["token"] = json!("");
        answer(reply, StatusCode::CREATED, &a);
        h
    })
    .await
    .unwrap_err();
    assert_eq!(err.kind(), "malformed");
    assert!(err.to_string().contains("status.token"), "{err}");
}

/// Collects everything a tracing subscriber writes.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl io::Write for Capture {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn an_undecodable_answer_keeps_the_token_out_of_errors_and_logs() {
    let logs = Capture::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    // Other tests of this binary may have cached "no subscriber is interested" for kube's
    // callsites on their threads: recompute with this one in place.
    tracing::callsite::rebuild_interest_cache();

    let err = request_with(spec(None, 3600), |mut h| async move {
        let (_, _, body, reply) = next_call(&mut h).await;
        answer(reply, StatusCode::CREATED, &issued_answer(&body, SECRET));
        h
    })
    .await
    .unwrap_err();
    assert_eq!(err.kind(), "malformed");
    assert!(!err.to_string().contains(SECRET), "{err}");
    assert!(!format!("{err:?}").contains(SECRET), "{err:?}");
    // The capture works (a line of this test's own); whether kube's own warn reaches it also
    // depends on tracing's process-wide callsite cache, which parallel tests share.
    tracing::warn!("capture check");
    let logged = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    assert!(logged.contains("capture check"), "the capture saw nothing");
    assert!(!logged.contains(SECRET), "the token was logged:\n{logged}");
}

fn token(issued: &str, expires: &str) -> IssuedToken {
    IssuedToken {
        token: SECRET.to_owned(),
        issued_at: at(issued),
        expires_at: at(expires),
    }
}

#[test]
fn debug_never_shows_the_token() {
    let t = token("2026-01-01T00:00:00Z", "2026-01-01T01:00:00Z");
    let shown = format!("{t:?} {t:#?}");
    assert!(!shown.contains(SECRET), "{shown}");
    assert!(shown.contains("2026-01-01T01:00:00Z"), "{shown}");
}

#[test]
fn refresh_comes_at_80_percent_of_life_or_after_the_maximum_age() {
    const DAY: Duration = Duration::from_secs(24 * 3600);
    let cases = [
        (
            "1h token",
            "2026-01-01T01:00:00Z",
            DAY,
            "2026-01-01T00:48:00Z",
        ),
        (
            "48h token",
            "2026-01-03T00:00:00Z",
            DAY,
            "2026-01-02T00:00:00Z",
        ),
        (
            "600 s token",
            "2026-01-01T00:10:00Z",
            DAY,
            "2026-01-01T00:08:00Z",
        ),
        (
            "1h token, 30 min max",
            "2026-01-01T01:00:00Z",
            DAY / 48,
            "2026-01-01T00:30:00Z",
        ),
        (
            "expiry before issue",
            "2025-12-31T23:00:00Z",
            DAY,
            "2025-12-31T23:00:00Z",
        ),
        (
            "unbounded max",
            "2026-01-01T01:00:00Z",
            Duration::MAX,
            "2026-01-01T00:48:00Z",
        ),
    ];
    for (name, expires, max, want) in cases {
        let t = token("2026-01-01T00:00:00Z", expires);
        assert_eq!(refresh_at(&t, max), at(want), "{name}");
    }
}

#[test]
fn a_token_is_valid_until_its_expiry() {
    let t = token("2026-01-01T00:00:00Z", "2026-01-01T01:00:00Z");
    assert!(is_valid(&t, at("2026-01-01T00:59:59Z")));
    assert!(is_valid(&t, at("2026-01-01T01:00:00Z")));
    assert!(!is_valid(&t, at("2026-01-01T01:00:01Z")));
}

#[test]
fn lifetimes_are_clamped_to_what_the_server_accepts() {
    let got: Vec<i64> = [0, 599, 600, 3600, i64::MAX]
        .map(|s| expiration_seconds(&spec(None, s)))
        .to_vec();
    assert_eq!(got, [600, 600, 600, 3600, 1 << 32]);
}

#[test]
fn retries_follow_the_api_retry_curve() {
    assert_eq!(retry_delay(0), Duration::from_millis(500));
    assert_eq!(retry_delay(3), Duration::from_secs(4));
    assert_eq!(retry_delay(40), Duration::from_secs(7));
}

#[test]
fn a_token_error_becomes_the_containers_config_error() {
    let e = TokenError::Api {
        kind: ApiErrorKind::NotFound,
        message: "serviceaccounts \"build\" not found".into(),
    };
    let c = e.config_error("build");
    assert_eq!(c.kind(), "token");
    assert_eq!(
        c.to_string(),
        "cannot issue a service-account token for \"build\": serviceaccounts \"build\" not found"
    );
}
