//! One request: admit it through the [`Gate`](super::gate::Gate), then route it. Bodies are plain text as
//! kubelet writes them, the Pod list is JSON, and a container log is streamed chunk by chunk
//! (hyper sends each chunk as it arrives, which `kubectl logs -f` relies on). The streaming
//! routes are `super::streaming`'s. Streaming sessions and followed logs each take a slot
//! under their cap ([`Slots`](super::limits::Slots)) or get `429`.

use std::sync::Arc;

use futures::TryStreamExt;
use http_body_util::{BodyExt, StreamBody};
use hyper::{
    Request, Response,
    body::Frame,
    header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue},
};
use k8s_openapi::{List, api::core::v1::Pod, apimachinery::pkg::apis::meta::v1::ListMeta};
use tokio::time::Instant;
use tracing::debug;

use crate::metrics::PROMETHEUS_TEXT;

use super::{
    context::{Api, Body, full, text},
    logs::{LogTarget, query},
    pods::PodSource,
    review::UserInfo,
    routes::{self, Route},
    scrape, stats,
    stream::{ExecTarget, metrics::SessionClock},
    streaming,
};

/// Marks a response to a request that passed authentication and authorization, so the
/// server counts its connection as authenticated (`super::conns`).
#[derive(Debug, Clone, Copy)]
pub(super) struct Admitted;

/// Answers one request; `cert_user` is the verified client certificate's user, if any.
pub(super) async fn handle<B>(
    api: Arc<Api>,
    cert_user: Option<UserInfo>,
    req: Request<B>,
) -> Response<Body> {
    let received = Instant::now();
    let (mut parts, body) = req.into_parts();
    drop(body);
    let method = parts.method.clone();
    let path = parts.uri.path().to_owned();
    let query = parts.uri.query().unwrap_or_default().to_owned();
    let authorization = parts
        .headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
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
    let mut resp = match routes::route(&method, &path) {
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
            container_logs(&api, target, &query).await
        }
        Route::Exec {
            namespace,
            pod,
            uid,
            container,
        } => {
            let target = ExecTarget::new(namespace, pod, uid, container);
            let clock = SessionClock::since(received, api.exec_metrics.clone());
            streaming::exec(&api, target, &query, &mut parts, clock)
        }
        Route::Attach {
            namespace,
            pod,
            uid,
            container,
        } => {
            let target = ExecTarget::new(namespace, pod, uid, container);
            streaming::attach(&api, target, &query, &mut parts).await
        }
        Route::PortForward {
            namespace,
            pod,
            uid,
        } => streaming::port_forward(&api, namespace, pod, uid, &query, &mut parts),
        Route::Streaming(s) => text(
            501,
            format!(
                "{} is not implemented yet by this node (tart-kubelet)",
                s.as_str()
            ),
        ),
        Route::StatsSummary => match &api.stats {
            Some(s) => full(
                200,
                "application/json",
                stats::summary(&s.stats()).to_string(),
            ),
            None => text(404, "404 page not found"),
        },
        Route::MetricsResource => match &api.stats {
            Some(s) => full(200, PROMETHEUS_TEXT, stats::resource_metrics(&s.stats())),
            None => text(404, "404 page not found"),
        },
        Route::Metrics => match &api.scrape {
            Some(s) => match scrape::metrics(s, &api.pods.pods()) {
                Ok(body) => full(200, PROMETHEUS_TEXT, body),
                Err(_) => text(500, "metrics encoding failed"),
            },
            None => text(404, "404 page not found"),
        },
        Route::MetricsCadvisor => match &api.stats {
            Some(s) => full(200, PROMETHEUS_TEXT, scrape::cadvisor(&s.stats())),
            None => text(404, "404 page not found"),
        },
        Route::MetricsProbes => match &api.scrape {
            Some(s) => full(200, PROMETHEUS_TEXT, scrape::probes_text(s)),
            None => text(404, "404 page not found"),
        },
        Route::MethodNotAllowed => text(405, "405: Method Not Allowed"),
        Route::NotFound => text(404, "404 page not found"),
    };
    resp.extensions_mut().insert(Admitted);
    resp
}

/// `GET /pods`: a v1 PodList of the Pods this agent runs (copied out of the store: the list
/// is its own value).
fn pod_list(pods: &dyn PodSource) -> Response<Body> {
    let list = List::<Pod> {
        items: pods.pods().iter().map(|p| Pod::clone(p)).collect(),
        metadata: ListMeta::default(),
    };
    match serde_json::to_string(&list) {
        Ok(json) => full(200, "application/json", json),
        Err(e) => text(500, format!("the Pod list does not serialize: {e}")),
    }
}

/// `/containerLogs`: a followed log takes a slot, held until its response ends.
async fn container_logs(api: &Api, target: LogTarget, raw: &str) -> Response<Body> {
    let q = match query::parse(raw) {
        Ok(q) => q,
        Err(e) => return text(e.status(), e.body()),
    };
    let slot = match q
        .follow
        .then(|| api.follows.take("followed logs"))
        .transpose()
    {
        Ok(slot) => slot,
        Err(message) => return text(429, message),
    };
    match api.logs.open(&target, &q).await {
        Ok(stream) => {
            let stream = stream.map_ok(move |chunk| {
                let _held = &slot;
                Frame::data(chunk)
            });
            let body = StreamBody::new(stream).boxed_unsync();
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
mod tests;
