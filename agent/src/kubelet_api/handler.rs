//! One request: admit it through the [`Gate`], then route it. Bodies are plain text as
//! kubelet writes them, the Pod list is JSON, and a container log is streamed chunk by chunk
//! (hyper sends each chunk as it arrives, which `kubectl logs -f` relies on).

use std::{convert::Infallible, io, sync::Arc};

use bytes::Bytes;
use futures::TryStreamExt;
use http_body_util::{BodyExt, Full, StreamBody, combinators::UnsyncBoxBody};
use hyper::{
    Request, Response, StatusCode,
    body::Frame,
    header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue},
};
use tracing::debug;

use super::{
    gate::Gate,
    logs::{LogSource, LogTarget, query},
    pods::PodSource,
    review::UserInfo,
    routes::{self, Route},
};

/// A response body: a whole buffer or a log stream.
pub type Body = UnsyncBoxBody<Bytes, io::Error>;

/// What a request may reach.
pub struct Api {
    /// Authentication and authorization.
    pub gate: Gate,
    /// The Pods this agent runs.
    pub pods: Arc<dyn PodSource>,
    /// Container logs.
    pub logs: Arc<dyn LogSource>,
}

fn full(status: u16, content_type: &'static str, body: impl Into<Bytes>) -> Response<Body> {
    let body = Full::new(body.into())
        .map_err(|e: Infallible| match e {})
        .boxed_unsync();
    let mut r = Response::new(body);
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

fn text(status: u16, body: impl Into<String>) -> Response<Body> {
    full(status, "text/plain; charset=utf-8", body.into())
}

/// Answers one request; `cert_user` is the verified client certificate's user, if any.
pub async fn handle<B>(
    api: Arc<Api>,
    cert_user: Option<UserInfo>,
    req: Request<B>,
) -> Response<Body> {
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    let query = req.uri().query().unwrap_or_default().to_owned();
    let authorization = req
        .headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    drop(req);
    let user = match api
        .gate
        .admit(cert_user.as_ref(), authorization.as_deref(), &method, &path)
        .await
    {
        Ok(u) => u,
        Err(refusal) => {
            debug!(%method, %path, status = refusal.status(), "refused");
            return text(refusal.status(), refusal.body());
        }
    };
    debug!(%method, %path, user = %user.name, "kubelet api request");
    match routes::route(&method, &path) {
        Route::Healthz => text(200, "ok"),
        Route::Pods => pod_list(api.pods.as_ref()),
        Route::ContainerLogs {
            namespace,
            pod,
            container,
        } => {
            let target = LogTarget {
                namespace: namespace.into(),
                pod: pod.into(),
                container: container.into(),
            };
            container_logs(api.logs.as_ref(), target, &query).await
        }
        Route::Streaming(s) => text(
            501,
            format!(
                "{} is not implemented yet by this node (tart-kubelet)",
                s.as_str()
            ),
        ),
        Route::MethodNotAllowed => text(405, "405: Method Not Allowed"),
        Route::NotFound => text(404, "404 page not found"),
    }
}

/// `GET /pods`: a v1 PodList of the Pods this agent runs.
fn pod_list(pods: &dyn PodSource) -> Response<Body> {
    let list = serde_json::json!({
        "kind": "PodList",
        "apiVersion": "v1",
        "metadata": {},
        "items": pods.pods(),
    });
    full(200, "application/json", list.to_string())
}

async fn container_logs(logs: &dyn LogSource, target: LogTarget, raw: &str) -> Response<Body> {
    let q = match query::parse(raw) {
        Ok(q) => q,
        Err(e) => return text(e.status(), e.body()),
    };
    match logs.open(&target, &q).await {
        Ok(stream) => {
            let body = StreamBody::new(stream.map_ok(Frame::data)).boxed_unsync();
            let mut r = Response::new(body);
            r.headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
            r
        }
        Err(e) => {
            debug!(kind = e.kind().as_str(), error = %e, "container log refused");
            text(e.status(), e.to_string())
        }
    }
}

#[cfg(test)]
#[path = "handler_tests.rs"]
mod tests;
