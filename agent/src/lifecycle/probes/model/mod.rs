//! A container's probes as the prober runs them: read from the Pod's container once, with the
//! API server's defaults filled in, its validation repeated, and named ports resolved, so that
//! nothing a probe attempt does can fail for a reason the spec already shows. Pure.

use std::time::Duration;

use k8s_openapi::{
    api::core::v1::{Container, HTTPGetAction, Probe},
    apimachinery::pkg::util::intstr::IntOrString,
};

use crate::lifecycle::handlers::model::{HttpGet, Scheme};

/// Which of a container's three probes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ProbeKind {
    /// `startupProbe`: gates the other two until it succeeds.
    Startup,
    /// `readinessProbe`: drives the container's readiness.
    Readiness,
    /// `livenessProbe`: a failure kills the container.
    Liveness,
}

impl ProbeKind {
    /// Every kind, in the order the prober considers them.
    pub(crate) const ALL: [ProbeKind; 3] = [Self::Startup, Self::Readiness, Self::Liveness];

    /// Metric label value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Startup => "startup",
            Self::Readiness => "readiness",
            Self::Liveness => "liveness",
        }
    }

    /// The word kubelet starts its probe event messages with.
    pub(crate) fn title(self) -> &'static str {
        match self {
            Self::Startup => "Startup",
            Self::Readiness => "Readiness",
            Self::Liveness => "Liveness",
        }
    }

    /// The container field that holds this probe.
    pub(crate) fn field(self) -> &'static str {
        match self {
            Self::Startup => "startupProbe",
            Self::Readiness => "readinessProbe",
            Self::Liveness => "livenessProbe",
        }
    }

    pub(crate) fn index(self) -> usize {
        match self {
            Self::Startup => 0,
            Self::Readiness => 1,
            Self::Liveness => 2,
        }
    }
}

/// What one probe attempt does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Action {
    /// Run a command in the guest with `tart exec`.
    Exec {
        /// The argv, never empty.
        command: Vec<String>,
    },
    /// An HTTP GET from the Mac to the guest.
    HttpGet(HttpGet),
    /// Open a TCP connection from the Mac to the guest.
    TcpSocket {
        /// Host to connect to; `None`: the Pod IP.
        host: Option<String>,
        /// Port to connect to.
        port: u16,
    },
}

/// One probe, with the API server's defaults applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProbeSpec {
    /// Which probe.
    pub kind: ProbeKind,
    /// What an attempt does.
    pub action: Action,
    /// `initialDelaySeconds`: the first attempt comes this long after the container started.
    pub initial_delay: Duration,
    /// `periodSeconds`.
    pub period: Duration,
    /// `timeoutSeconds`: each attempt is bounded by it.
    pub timeout: Duration,
    /// `successThreshold`: consecutive successes that make the probe pass.
    pub success_threshold: u32,
    /// `failureThreshold`: consecutive failures that make the probe fail.
    pub failure_threshold: u32,
    /// The probe's own `terminationGracePeriodSeconds` (liveness and startup only).
    pub termination_grace: Option<Duration>,
}

/// The probes of one container.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct ProbeSet {
    /// The container's name (kubelet's kill messages name it).
    pub container: String,
    /// `startupProbe`.
    pub startup: Option<ProbeSpec>,
    /// `readinessProbe`.
    pub readiness: Option<ProbeSpec>,
    /// `livenessProbe`.
    pub liveness: Option<ProbeSpec>,
}

/// Why a container's probe cannot be run; each message starts with the field it is about.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ProbeSpecError {
    /// None, or more than one, of `exec`, `httpGet`, `tcpSocket`, `grpc`.
    #[error("{probe}: must specify exactly one handler (exec, httpGet, tcpSocket or grpc)")]
    Handlers {
        /// The probe field.
        probe: &'static str,
    },
    /// `exec.command` is empty.
    #[error("{probe}.exec.command: Required value")]
    EmptyCommand {
        /// The probe field.
        probe: &'static str,
    },
    /// A `grpc` probe: a VM has no gRPC health client here.
    #[error("{probe}.grpc: gRPC probes are not supported on this node")]
    GrpcUnsupported {
        /// The probe field.
        probe: &'static str,
    },
    /// A port name no `containerPort` of the container carries.
    #[error("{field}: named port {name:?} is not a containerPort")]
    NamedPort {
        /// The port field.
        field: String,
        /// The name given.
        name: String,
    },
    /// A port number outside 1–65535.
    #[error("{field}: invalid port number: {port}")]
    InvalidPort {
        /// The port field.
        field: String,
        /// The number given.
        port: i64,
    },
    /// `httpGet.scheme` other than HTTP or HTTPS.
    #[error(
        "{probe}.httpGet.scheme: unsupported value {scheme:?}: supported values: \"HTTP\", \"HTTPS\""
    )]
    Scheme {
        /// The probe field.
        probe: &'static str,
        /// The scheme given.
        scheme: String,
    },
    /// `httpGet.protocol` other than the HTTP/1.1 default.
    #[error(
        "{probe}.httpGet.protocol: {protocol:?} is not supported on this node (only the HTTP/1.1 default)"
    )]
    Protocol {
        /// The probe field.
        probe: &'static str,
        /// The protocol given.
        protocol: String,
    },
    /// An `httpHeaders` entry that is not a valid HTTP header.
    #[error("{probe}.httpGet.httpHeaders[{index}]: invalid header {name:?}")]
    Header {
        /// The probe field.
        probe: &'static str,
        /// Index in `httpHeaders`.
        index: usize,
        /// The name given.
        name: String,
    },
    /// A number below its minimum.
    #[error("{field}: must be greater than or equal to {min} (got {value})")]
    TooSmall {
        field: String,
        /// The value given.
        value: i64,
        /// The least value the API server accepts.
        min: i64,
    },
    /// `successThreshold` other than 1 on a liveness or startup probe.
    #[error("{probe}.successThreshold: must be 1 (got {value})")]
    SuccessThreshold {
        /// The probe field.
        probe: &'static str,
        /// The value given.
        value: i64,
    },
    /// `terminationGracePeriodSeconds` on a readiness probe.
    #[error("readinessProbe.terminationGracePeriodSeconds: must not be set for readinessProbes")]
    ReadinessGrace,
}

/// API server defaults (`SetDefaults_Probe`): a field that is absent or 0 takes these.
const DEFAULT_PERIOD: i64 = 10;
const DEFAULT_TIMEOUT: i64 = 1;
const DEFAULT_SUCCESS: i64 = 1;
const DEFAULT_FAILURE: i64 = 3;

impl ProbeSet {
    /// The container's probes. An error names the first field that cannot be run.
    pub(crate) fn from_container(c: &Container) -> Result<ProbeSet, ProbeSpecError> {
        let read = |kind: ProbeKind, p: &Option<Probe>| {
            p.as_ref().map(|p| probe_spec(kind, p, c)).transpose()
        };
        Ok(ProbeSet {
            container: c.name.clone(),
            startup: read(ProbeKind::Startup, &c.startup_probe)?,
            readiness: read(ProbeKind::Readiness, &c.readiness_probe)?,
            liveness: read(ProbeKind::Liveness, &c.liveness_probe)?,
        })
    }

    /// No probe at all: readiness keeps the node's own rule.
    pub(crate) fn is_empty(&self) -> bool {
        self.startup.is_none() && self.readiness.is_none() && self.liveness.is_none()
    }

    /// The probe of one kind.
    pub(crate) fn get(&self, kind: ProbeKind) -> Option<&ProbeSpec> {
        match kind {
            ProbeKind::Startup => self.startup.as_ref(),
            ProbeKind::Readiness => self.readiness.as_ref(),
            ProbeKind::Liveness => self.liveness.as_ref(),
        }
    }
}

fn probe_spec(kind: ProbeKind, p: &Probe, c: &Container) -> Result<ProbeSpec, ProbeSpecError> {
    let probe = kind.field();
    let handlers = [
        p.exec.is_some(),
        p.http_get.is_some(),
        p.tcp_socket.is_some(),
        p.grpc.is_some(),
    ];
    if handlers.iter().filter(|h| **h).count() != 1 {
        return Err(ProbeSpecError::Handlers { probe });
    }
    let action = if let Some(e) = &p.exec {
        let command = e.command.clone().unwrap_or_default();
        if command.is_empty() {
            return Err(ProbeSpecError::EmptyCommand { probe });
        }
        Action::Exec { command }
    } else if let Some(h) = &p.http_get {
        Action::HttpGet(http_get(probe, h, c)?)
    } else if let Some(t) = &p.tcp_socket {
        Action::TcpSocket {
            host: non_empty(&t.host),
            port: resolve_port(&format!("{probe}.tcpSocket.port"), &t.port, c)?,
        }
    } else {
        return Err(ProbeSpecError::GrpcUnsupported { probe });
    };

    let field = |name: &str| format!("{probe}.{name}");
    let seconds = |name: &str, v: Option<i32>, default: i64, min: i64| {
        let v = i64::from(v.unwrap_or(0));
        let v = if v == 0 { default } else { v };
        if v < min {
            return Err(ProbeSpecError::TooSmall {
                field: field(name),
                value: v,
                min,
            });
        }
        Ok(v)
    };
    let initial = seconds("initialDelaySeconds", p.initial_delay_seconds, 0, 0)?;
    let period = seconds("periodSeconds", p.period_seconds, DEFAULT_PERIOD, 1)?;
    let timeout = seconds("timeoutSeconds", p.timeout_seconds, DEFAULT_TIMEOUT, 1)?;
    let success = seconds("successThreshold", p.success_threshold, DEFAULT_SUCCESS, 1)?;
    let failure = seconds("failureThreshold", p.failure_threshold, DEFAULT_FAILURE, 1)?;
    if kind != ProbeKind::Readiness && success != 1 {
        return Err(ProbeSpecError::SuccessThreshold {
            probe,
            value: success,
        });
    }
    let termination_grace = match p.termination_grace_period_seconds {
        None => None,
        Some(_) if kind == ProbeKind::Readiness => return Err(ProbeSpecError::ReadinessGrace),
        Some(g) if g < 1 => {
            return Err(ProbeSpecError::TooSmall {
                field: field("terminationGracePeriodSeconds"),
                value: g,
                min: 1,
            });
        }
        Some(g) => Some(Duration::from_secs(g.unsigned_abs())),
    };
    let secs = |v: i64| Duration::from_secs(v.unsigned_abs());
    let count = |v: i64| u32::try_from(v).unwrap_or(u32::MAX);
    Ok(ProbeSpec {
        kind,
        action,
        initial_delay: secs(initial),
        period: secs(period),
        timeout: secs(timeout),
        success_threshold: count(success),
        failure_threshold: count(failure),
        termination_grace,
    })
}

pub(crate) fn http_get(
    probe: &'static str,
    h: &HTTPGetAction,
    c: &Container,
) -> Result<HttpGet, ProbeSpecError> {
    let scheme = match h.scheme.as_deref() {
        None | Some("") | Some("HTTP") => Scheme::Http,
        Some("HTTPS") => Scheme::Https,
        Some(other) => {
            return Err(ProbeSpecError::Scheme {
                probe,
                scheme: other.to_owned(),
            });
        }
    };
    if let Some(protocol) = h.protocol.as_deref().filter(|p| !p.is_empty()) {
        return Err(ProbeSpecError::Protocol {
            probe,
            protocol: protocol.to_owned(),
        });
    }
    let headers = h.http_headers.as_deref().unwrap_or_default();
    for (index, header) in headers.iter().enumerate() {
        let valid = hyper::header::HeaderName::from_bytes(header.name.as_bytes()).is_ok()
            && hyper::header::HeaderValue::from_str(&header.value).is_ok();
        if !valid {
            return Err(ProbeSpecError::Header {
                probe,
                index,
                name: header.name.clone(),
            });
        }
    }
    Ok(HttpGet {
        scheme,
        host: non_empty(&h.host),
        port: resolve_port(&format!("{probe}.httpGet.port"), &h.port, c)?,
        path: h.path.clone().unwrap_or_default(),
        headers: headers
            .iter()
            .map(|h| (h.name.clone(), h.value.clone()))
            .collect(),
    })
}

/// A probe's port: a number, or the name of one of the container's ports (kubelet's last resort,
/// a number written as a string, is accepted too).
fn resolve_port(field: &str, port: &IntOrString, c: &Container) -> Result<u16, ProbeSpecError> {
    let number = match port {
        IntOrString::Int(n) => i64::from(*n),
        IntOrString::String(name) => {
            let named = c
                .ports
                .iter()
                .flatten()
                .find(|p| p.name.as_deref() == Some(name.as_str()));
            match (named, name.parse::<i64>()) {
                (Some(p), _) => i64::from(p.container_port),
                (None, Ok(n)) => n,
                (None, Err(_)) => {
                    return Err(ProbeSpecError::NamedPort {
                        field: field.to_owned(),
                        name: name.clone(),
                    });
                }
            }
        }
    };
    match u16::try_from(number) {
        Ok(p) if p > 0 => Ok(p),
        _ => Err(ProbeSpecError::InvalidPort {
            field: field.to_owned(),
            port: number,
        }),
    }
}

fn non_empty(s: &Option<String>) -> Option<String> {
    s.clone().filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests;
