//! PURE: which handler a kubelet API path goes to.
//!
//! Served: `/healthz`, `/pods`, `/containerLogs/{namespace}/{pod}/{container}`,
//! `/exec/{namespace}/{pod}[/{uid}]/{container}`, `/attach/{namespace}/{pod}[/{uid}]/{container}`
//! and `/portForward/{namespace}/{pod}[/{uid}]` (GET and POST), `/stats/summary` and
//! `/metrics`, `/metrics/cadvisor`, `/metrics/probes` and `/metrics/resource`. `/run` is
//! recognised so it can answer "not implemented yet" rather than 404; kubelet's other paths
//! (`/logs`, `/spec`, ...) are not served and get 404, which kubelet clients accept.

use hyper::Method;

/// A streaming endpoint this agent does not implement yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Streaming {
    /// `/exec/...`.
    Exec,
    /// `/attach/...`.
    Attach,
    /// `/portForward/...`.
    PortForward,
    /// `/run/...`.
    Run,
}

impl Streaming {
    /// The path segment.
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Self::Exec => "exec",
            Self::Attach => "attach",
            Self::PortForward => "portForward",
            Self::Run => "run",
        }
    }
}

/// Where a request goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Route<'a> {
    /// `GET /healthz`.
    Healthz,
    /// `GET /pods` (and `/pods/`).
    Pods,
    /// `GET /containerLogs/{namespace}/{pod}/{container}`.
    ContainerLogs {
        namespace: &'a str,
        pod: &'a str,
        container: &'a str,
    },
    /// `GET`/`POST /exec/{namespace}/{pod}[/{uid}]/{container}`.
    Exec {
        namespace: &'a str,
        pod: &'a str,
        /// Pod UID, when the path has four segments.
        uid: Option<&'a str>,
        container: &'a str,
    },
    /// `GET`/`POST /attach/{namespace}/{pod}[/{uid}]/{container}`.
    Attach {
        namespace: &'a str,
        pod: &'a str,
        /// Pod UID, when the path has four segments.
        uid: Option<&'a str>,
        container: &'a str,
    },
    /// `GET`/`POST /portForward/{namespace}/{pod}[/{uid}]`.
    PortForward {
        namespace: &'a str,
        pod: &'a str,
        /// Pod UID, when the path has three segments.
        uid: Option<&'a str>,
    },
    /// `GET /stats/summary` (and `/stats/summary/`).
    StatsSummary,
    /// `GET /metrics/resource`.
    MetricsResource,
    /// `GET /metrics`.
    Metrics,
    /// `GET /metrics/cadvisor`.
    MetricsCadvisor,
    /// `GET /metrics/probes`.
    MetricsProbes,
    /// A streaming path.
    Streaming(Streaming),
    /// A served path with a method it does not accept.
    MethodNotAllowed,
    /// Nothing here.
    NotFound,
}

/// The route of `method path`.
pub(super) fn route<'a>(method: &Method, path: &'a str) -> Route<'a> {
    let get_only = |r: Route<'a>| {
        if *method == Method::GET {
            r
        } else {
            Route::MethodNotAllowed
        }
    };
    match path {
        "/healthz" => return get_only(Route::Healthz),
        "/pods" | "/pods/" => return get_only(Route::Pods),
        "/stats/summary" | "/stats/summary/" => return get_only(Route::StatsSummary),
        "/metrics/resource" => return get_only(Route::MetricsResource),
        "/metrics" => return get_only(Route::Metrics),
        "/metrics/cadvisor" => return get_only(Route::MetricsCadvisor),
        "/metrics/probes" => return get_only(Route::MetricsProbes),
        _ => {}
    }
    let mut segments = path.trim_start_matches('/').split('/');
    let first = segments.next().unwrap_or_default();
    let rest: Vec<&str> = segments.collect();
    let streaming = match first {
        "exec" => Some(Streaming::Exec),
        "attach" => Some(Streaming::Attach),
        "portForward" => Some(Streaming::PortForward),
        "run" => Some(Streaming::Run),
        _ => None,
    };
    if let Some(kind @ (Streaming::Exec | Streaming::Attach)) = streaming {
        let exec = match rest.as_slice() {
            [namespace, pod, container] => Some((*namespace, *pod, None, *container)),
            [namespace, pod, uid, container] => Some((*namespace, *pod, Some(*uid), *container)),
            _ => None,
        };
        return match exec {
            Some(_) if rest.iter().any(|s| s.is_empty()) => Route::NotFound,
            Some(_) if *method != Method::GET && *method != Method::POST => Route::MethodNotAllowed,
            Some((namespace, pod, uid, container)) if kind == Streaming::Exec => Route::Exec {
                namespace,
                pod,
                uid,
                container,
            },
            Some((namespace, pod, uid, container)) => Route::Attach {
                namespace,
                pod,
                uid,
                container,
            },
            None => Route::NotFound,
        };
    }
    if streaming == Some(Streaming::PortForward) {
        let forward = match rest.as_slice() {
            [namespace, pod] => Some((*namespace, *pod, None)),
            [namespace, pod, uid] => Some((*namespace, *pod, Some(*uid))),
            _ => None,
        };
        return match forward {
            Some(_) if rest.iter().any(|s| s.is_empty()) => Route::NotFound,
            Some(_) if *method != Method::GET && *method != Method::POST => Route::MethodNotAllowed,
            Some((namespace, pod, uid)) => Route::PortForward {
                namespace,
                pod,
                uid,
            },
            None => Route::NotFound,
        };
    }
    if let Some(s) = streaming {
        return if rest.len() >= 2 && rest.iter().all(|s| !s.is_empty()) {
            Route::Streaming(s)
        } else {
            Route::NotFound
        };
    }
    match (first, rest.as_slice()) {
        ("containerLogs", [namespace, pod, container])
            if ![namespace, pod, container].iter().any(|s| s.is_empty()) =>
        {
            get_only(Route::ContainerLogs {
                namespace,
                pod,
                container,
            })
        }
        _ => Route::NotFound,
    }
}

#[cfg(test)]
mod tests;
