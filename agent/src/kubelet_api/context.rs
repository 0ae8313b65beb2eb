//! What the request handlers share: [`Api`], what a request may reach, and the response
//! bodies they build ([`full`], [`text`]).

use std::{convert::Infallible, io, sync::Arc};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::UnsyncBoxBody};
use hyper::{
    Response, StatusCode,
    header::{CONTENT_TYPE, HeaderValue},
};

use super::{
    gate::Gate,
    limits::Slots,
    logs::LogSource,
    pods::PodSource,
    scrape::Scrape,
    stats::StatsSource,
    stream::{ExecSource, metrics::ExecMetrics, remotecommand::session::Timeouts},
};

/// A response body: a whole buffer or a log stream.
pub(super) type Body = UnsyncBoxBody<Bytes, io::Error>;

/// What a request may reach.
pub(super) struct Api {
    /// Authentication and authorization.
    pub gate: Gate,
    /// The Pods this agent runs.
    pub pods: Arc<dyn PodSource>,
    pub logs: Arc<dyn LogSource>,
    /// Exec into the guests; `None` answers that exec is not implemented.
    pub exec: Option<Arc<dyn ExecSource>>,
    pub exec_metrics: ExecMetrics,
    /// CPU and memory for `/stats/summary` and `/metrics/resource`.
    pub stats: Option<Arc<dyn StatsSource>>,
    /// What `/metrics` and `/metrics/probes` read; `None`: 404.
    pub scrape: Option<Scrape>,
    /// exec, attach and port-forward sessions at once.
    pub streams: Slots,
    /// Followed logs at once.
    pub follows: Slots,
    /// The streaming sessions' time limits.
    pub timeouts: Timeouts,
}

pub(super) fn full(
    status: u16,
    content_type: &'static str,
    body: impl Into<Bytes>,
) -> Response<Body> {
    let body = Full::new(body.into())
        .map_err(|e: Infallible| match e {})
        .boxed_unsync();
    let mut r = Response::new(body);
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

pub(super) fn text(status: u16, body: impl Into<String>) -> Response<Body> {
    full(status, "text/plain; charset=utf-8", body.into())
}
