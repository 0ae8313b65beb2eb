//! PURE: the HTTP side of a streaming request (docs/reference/kubelet-api.md §5.1, §5.6, §5.8) —
//! which upgrade it asks for and what to answer: 101 with the agreed remotecommand version
//! for SPDY/3.1; a 403 before any upgrade for WebSocket, which this node does not serve, so
//! kubectl falls back to SPDY; 400 without an upgrade.

use hyper::header::{CONNECTION, HeaderMap, UPGRADE};

use super::remotecommand::protocol::{self, NegotiationError, PROTOCOLS, Protocol};

/// Header with the client's remotecommand versions (one line each, or comma-separated).
pub(crate) const PROTOCOL_HEADER: &str = "x-stream-protocol-version";
/// Header listing the served versions on a 403.
pub(crate) const ACCEPTED_HEADER: &str = "x-accepted-stream-protocol-versions";

/// The upgrade a request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Upgrade {
    /// `Upgrade: SPDY/3.1`.
    Spdy,
    /// `Upgrade: websocket`.
    WebSocket,
    /// No upgrade, or one of another kind.
    None,
}

/// Which upgrade `headers` ask for (`Connection` must contain `upgrade`).
pub(crate) fn kind(headers: &HeaderMap) -> Upgrade {
    let has = |name, token: &str| {
        headers.get_all(name).iter().any(|v| {
            v.to_str()
                .is_ok_and(|s| s.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
        })
    };
    if !has(CONNECTION, "upgrade") {
        return Upgrade::None;
    }
    if has(UPGRADE, "spdy/3.1") {
        Upgrade::Spdy
    } else if has(UPGRADE, "websocket") {
        Upgrade::WebSocket
    } else {
        Upgrade::None
    }
}

/// A plain HTTP answer to give before (or instead of) an upgrade.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Answer {
    /// Status code.
    pub status: u16,
    /// Extra headers.
    pub headers: Vec<(&'static str, String)>,
    /// Text body.
    pub body: String,
}

impl Answer {
    pub(super) fn text(status: u16, body: impl Into<String>) -> Self {
        Self {
            status,
            headers: vec![],
            body: body.into(),
        }
    }
}

/// The version to switch to, or the answer that refuses the request.
///
/// # Errors
/// The refusal: 403 for WebSocket, 400 without an upgrade or without versions, 403 with the
/// served list when no version is shared.
pub(crate) fn decide(headers: &HeaderMap) -> Result<Protocol, Answer> {
    let served: Vec<&'static str> = PROTOCOLS.iter().map(|p| p.as_str()).collect();
    let chosen = negotiate_with(headers, &served)?;
    Ok(PROTOCOLS
        .into_iter()
        .find(|p| p.as_str() == chosen)
        .unwrap_or(Protocol::V4))
}

/// Like [`decide`] for port-forward, whose one version is `portforward.k8s.io`.
///
/// # Errors
/// As [`decide`].
pub(crate) fn decide_forward(headers: &HeaderMap) -> Result<&'static str, Answer> {
    negotiate_with(headers, &[super::portforward::spdy::PROTOCOL])
}

fn negotiate_with(headers: &HeaderMap, served: &[&'static str]) -> Result<&'static str, Answer> {
    match kind(headers) {
        Upgrade::Spdy => {}
        Upgrade::WebSocket => {
            return Err(Answer::text(
                403,
                "websocket streaming is not supported by this node; use SPDY/3.1",
            ));
        }
        Upgrade::None => {
            return Err(Answer::text(
                400,
                "unable to upgrade: missing upgrade headers in request",
            ));
        }
    }
    let offers: Vec<String> = headers
        .get_all(PROTOCOL_HEADER)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|l| l.split(','))
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect();
    let found = protocol::first_served(&offers, served);
    match found {
        Ok(p) => Ok(p),
        Err(NegotiationError::Missing) => Err(Answer::text(
            400,
            "unable to upgrade: X-Stream-Protocol-Version is required",
        )),
        Err(NegotiationError::Unsupported(offers)) => Err(Answer {
            status: 403,
            headers: served
                .iter()
                .map(|p| (ACCEPTED_HEADER, (*p).to_owned()))
                .collect(),
            body: format!(
                "unable to upgrade: unable to negotiate protocol: client supports {offers:?}, server accepts {served:?}"
            ),
        }),
    }
}

#[cfg(test)]
mod tests;
