//! The admin HTTP endpoint (axum): `/metrics` (OpenMetrics text of the one [`Registry`]),
//! `/healthz` (the process is alive and serving) and `/readyz` (the API server is reachable,
//! the Lease was renewed within two renew intervals and is not held by another agent
//! instance, tart is usable; 503 naming each failing check otherwise). [`Readiness`] is the bookkeeping the node tasks update.

use std::{
    net::SocketAddr,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use axum::{
    Router,
    extract::State,
    http::{HeaderMap, StatusCode, header},
    response::IntoResponse,
    routing::get,
};
use prometheus_client::registry::Registry;
use tokio::{sync::watch, time::Instant};

pub(crate) use crate::metrics::{OPENMETRICS, PROMETHEUS_TEXT, to_prometheus_text};

/// Readiness facts, updated by the Lease and status tasks. Clones share state.
#[derive(Clone, Debug)]
pub(crate) struct Readiness {
    inner: Arc<ReadyInner>,
}

#[derive(Debug)]
struct ReadyInner {
    lease_interval: Duration,
    last_lease: Mutex<Option<Instant>>,
    /// Another instance that holds our Lease (this agent is fenced).
    fenced_by: Mutex<Option<String>>,
    api_ok: AtomicBool,
    tart_ok: AtomicBool,
}

/// One `/readyz` check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Check {
    /// `api`, `lease` or `tart`.
    pub name: &'static str,
    /// Passed.
    pub ok: bool,
    /// Why it failed (empty when ok).
    pub detail: String,
}

impl Readiness {
    /// Lease renewed every `lease_interval` when healthy.
    pub(crate) fn new(lease_interval: Duration) -> Self {
        Self {
            inner: Arc::new(ReadyInner {
                lease_interval,
                last_lease: Mutex::new(None),
                fenced_by: Mutex::new(None),
                api_ok: AtomicBool::new(false),
                tart_ok: AtomicBool::new(false),
            }),
        }
    }

    /// A Lease renewal succeeded (also proves the API is reachable).
    pub(crate) fn lease_renewed(&self) {
        *self.lock() = Some(Instant::now());
        self.api_ok();
    }

    /// Another agent instance, `holder`, holds our Lease: the lease check fails for good.
    pub(crate) fn fenced(&self, holder: &str) {
        *self
            .inner
            .fenced_by
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(holder.to_owned());
    }

    /// An API request succeeded.
    pub(crate) fn api_ok(&self) {
        self.inner.api_ok.store(true, Ordering::Relaxed);
    }

    /// An API request failed or timed out.
    pub(crate) fn api_failed(&self) {
        self.inner.api_ok.store(false, Ordering::Relaxed);
    }

    /// The latest tart probe verdict.
    pub(crate) fn set_tart(&self, usable: bool) {
        self.inner.tart_ok.store(usable, Ordering::Relaxed);
    }

    /// Evaluate the checks now.
    pub(crate) fn checks(&self) -> Vec<Check> {
        let api = self.inner.api_ok.load(Ordering::Relaxed);
        let lease_age = self.lock().map(|t| t.elapsed());
        let fenced_by = self
            .inner
            .fenced_by
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        let lease_ok =
            fenced_by.is_none() && lease_age.is_some_and(|a| a <= self.inner.lease_interval * 2);
        let tart = self.inner.tart_ok.load(Ordering::Relaxed);
        vec![
            Check {
                name: "api",
                ok: api,
                detail: if api {
                    String::new()
                } else {
                    "the last API request failed".into()
                },
            },
            Check {
                name: "lease",
                ok: lease_ok,
                detail: match (lease_age, fenced_by) {
                    _ if lease_ok => String::new(),
                    (_, Some(holder)) => format!(
                        "another agent instance ({holder}) holds this Node's Lease; this one stopped acting"
                    ),
                    (None, None) => "the Lease has not been renewed yet".into(),
                    (Some(a), None) => format!("the Lease was last renewed {}s ago", a.as_secs()),
                },
            },
            Check {
                name: "tart",
                ok: tart,
                detail: if tart {
                    String::new()
                } else {
                    "tart is not usable (see the node's TartReady condition)".into()
                },
            },
        ]
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Instant>> {
        self.inner
            .last_lease
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[derive(Clone)]
struct AppState {
    registry: Arc<Registry>,
    readiness: Readiness,
}

/// The admin router.
pub(crate) fn router(registry: Arc<Registry>, readiness: Readiness) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .with_state(AppState {
            registry,
            readiness,
        })
}

/// Bind `addr` (port 0 = any free port).
///
/// # Errors
/// The bind error.
pub(crate) async fn bind(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    tokio::net::TcpListener::bind(addr).await
}

/// Serve until `shutdown` turns true.
///
/// # Errors
/// The server's I/O error.
pub(crate) async fn serve(
    listener: tokio::net::TcpListener,
    app: Router,
    mut shutdown: watch::Receiver<bool>,
) -> std::io::Result<()> {
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            let _ = shutdown.wait_for(|s| *s).await;
        })
        .await
}

/// Content negotiation like Prometheus' Go client: OpenMetrics when the scraper asks for it
/// (Prometheus does), else the classic text format, which `curl | promtool check metrics`
/// understands (promtool lints counters by their `_total` family name).
fn wants_openmetrics(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("application/openmetrics-text"))
}

async fn metrics(State(st): State<AppState>, headers: HeaderMap) -> impl IntoResponse {
    let mut body = String::new();
    match prometheus_client::encoding::text::encode(&mut body, &st.registry) {
        Ok(()) if wants_openmetrics(&headers) => {
            (StatusCode::OK, [(header::CONTENT_TYPE, OPENMETRICS)], body)
        }
        Ok(()) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, PROMETHEUS_TEXT)],
            to_prometheus_text(&body),
        ),
        Err(_) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            "metrics encoding failed\n".into(),
        ),
    }
}

async fn readyz(State(st): State<AppState>) -> impl IntoResponse {
    let checks = st.readiness.checks();
    let all_ok = checks.iter().all(|c| c.ok);
    (
        if all_ok {
            StatusCode::OK
        } else {
            StatusCode::SERVICE_UNAVAILABLE
        },
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        readyz_body(&checks),
    )
}

/// Kubernetes-style `/readyz` text: one `[+]name ok` / `[-]name failed: why` line per check.
pub(crate) fn readyz_body(checks: &[Check]) -> String {
    let mut s = String::new();
    for c in checks {
        if c.ok {
            s.push_str(&format!("[+]{} ok\n", c.name));
        } else {
            s.push_str(&format!("[-]{} failed: {}\n", c.name, c.detail));
        }
    }
    let failed: Vec<_> = checks.iter().filter(|c| !c.ok).map(|c| c.name).collect();
    if failed.is_empty() {
        s.push_str("readyz check passed\n");
    } else {
        s.push_str(&format!("readyz check failed: {}\n", failed.join(",")));
    }
    s
}

#[cfg(test)]
mod tests;
