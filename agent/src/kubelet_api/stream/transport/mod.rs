//! Which transport an exec or attach request gets, and opening it after the 101: SPDY/3.1
//! with a remotecommand version (docs/reference/kubelet-api.md §5.1), or a WebSocket with a channel
//! subprotocol (docs/reference/kubelet-api.md §5.6). Both end in the same [`Opened`] session, so
//! the session logic (the session and attach modules) is written once.
//!
//! A WebSocket asking for nothing served (the `SPDY/3.1+portforward.k8s.io` tunnel, an
//! unknown version, no protocol at all) is refused with a 4xx before upgrading, never a 101,
//! so kubectl falls back to SPDY.

use std::time::Duration;

use hyper::header::HeaderMap;
use tokio::io::{AsyncRead, AsyncWrite};

use super::{
    remotecommand::{
        self,
        protocol::{ExecOptions, Protocol},
        session::{End, Link, Opened, Sink, Streams, Timeouts},
    },
    upgrade::{self, Answer, Upgrade},
    websocket::{
        conn::WsConn,
        frame::{self as ws_frame, WsProtocol},
    },
};

/// The client's WebSocket subprotocols.
pub(crate) const WS_PROTOCOL_HEADER: &str = "sec-websocket-protocol";
const WS_KEY_HEADER: &str = "sec-websocket-key";
const WS_VERSION_HEADER: &str = "sec-websocket-version";
const WS_ACCEPT_HEADER: &str = "sec-websocket-accept";

/// The transport agreed for one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Transport {
    /// SPDY/3.1 with this remotecommand version.
    Spdy(Protocol),
    /// WebSocket with this subprotocol; `accept` answers the client's key.
    WebSocket {
        /// The subprotocol.
        protocol: WsProtocol,
        /// `Sec-WebSocket-Accept`.
        accept: String,
    },
}

/// PURE: the transport `headers` ask for, or the plain answer that refuses them.
///
/// # Errors
/// As [`upgrade::decide`] for SPDY; for a WebSocket, 400 without a key or version 13, and 403
/// when no served subprotocol is offered.
pub(crate) fn decide(headers: &HeaderMap) -> Result<Transport, Answer> {
    if upgrade::kind(headers) != Upgrade::WebSocket {
        return upgrade::decide(headers).map(Transport::Spdy);
    }
    websocket(headers, &ws_frame::SERVED)
        .map(|(protocol, accept)| Transport::WebSocket { protocol, accept })
}

/// PURE: the subprotocol (the first of `served` the client offered) and the accept key of a
/// WebSocket upgrade.
///
/// # Errors
/// 400 without a key or version 13; 403 when no served subprotocol is offered.
pub(crate) fn websocket(
    headers: &HeaderMap,
    served: &[WsProtocol],
) -> Result<(WsProtocol, String), Answer> {
    let text = |name| headers.get(name).and_then(|v| v.to_str().ok());
    let Some(key) = text(WS_KEY_HEADER).filter(|k| !k.trim().is_empty()) else {
        return Err(Answer::text(400, "missing Sec-WebSocket-Key"));
    };
    if text(WS_VERSION_HEADER).map(str::trim) != Some("13") {
        return Err(Answer::text(
            400,
            "unsupported Sec-WebSocket-Version (want 13)",
        ));
    }
    let offers = headers
        .get_all(WS_PROTOCOL_HEADER)
        .iter()
        .filter_map(|v| v.to_str().ok());
    match ws_frame::negotiate_among(served, offers) {
        Some(protocol) => Ok((protocol, ws_frame::accept_key(key))),
        None => Err(Answer::text(
            403,
            "unable to upgrade: requested protocol(s) are not supported",
        )),
    }
}

/// The headers of a SPDY/3.1 101 agreeing on `protocol` (a remotecommand or port-forward
/// version).
pub(crate) fn spdy_switching_headers(protocol: &str) -> Vec<(&'static str, String)> {
    vec![
        ("connection", "Upgrade".into()),
        ("upgrade", "SPDY/3.1".into()),
        (upgrade::PROTOCOL_HEADER, protocol.into()),
    ]
}

/// The headers of a WebSocket 101.
pub(crate) fn ws_switching_headers(
    protocol: WsProtocol,
    accept: &str,
) -> Vec<(&'static str, String)> {
    vec![
        ("connection", "Upgrade".into()),
        ("upgrade", "websocket".into()),
        (WS_ACCEPT_HEADER, accept.to_owned()),
        (WS_PROTOCOL_HEADER, protocol.as_str().into()),
    ]
}

impl Transport {
    /// The transport's name, for logs.
    pub(crate) fn as_str(&self) -> &'static str {
        match self {
            Self::Spdy(_) => "spdy",
            Self::WebSocket { .. } => "websocket",
        }
    }

    /// The agreed protocol's name.
    pub(crate) fn protocol(&self) -> &'static str {
        match self {
            Self::Spdy(p) => p.as_str(),
            Self::WebSocket { protocol, .. } => protocol.as_str(),
        }
    }

    /// The headers of the 101.
    pub(crate) fn switching_headers(&self) -> Vec<(&'static str, String)> {
        match self {
            Self::Spdy(p) => spdy_switching_headers(p.as_str()),
            Self::WebSocket { protocol, accept } => ws_switching_headers(*protocol, accept),
        }
    }

    /// Serves `io` (the upgraded connection) and waits for the streams `options` imply.
    ///
    /// # Errors
    /// The session's end when the client goes away first or is too slow to open its streams.
    pub(crate) async fn open<IO>(
        self,
        io: IO,
        options: &ExecOptions,
        t: Timeouts,
    ) -> Result<Opened, End>
    where
        IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        match self {
            Self::Spdy(p) => {
                let conn = spdy::conn::Conn::start(io, t.idle);
                remotecommand::spdy::open(conn, p, options, t).await
            }
            Self::WebSocket { protocol, .. } => Ok(open_ws(io, protocol, options, t.idle).await),
        }
    }
}

/// A WebSocket's channels exist from the start: the requested ones are taken as open, and
/// one empty message on the lowest writable channel tells the client the session is ready.
async fn open_ws<IO>(io: IO, p: WsProtocol, o: &ExecOptions, idle: Duration) -> Opened
where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let mut readable = Vec::new();
    if o.stdin {
        readable.push(ws_frame::STDIN);
    }
    if o.tty {
        readable.push(ws_frame::RESIZE);
    }
    let (conn, mut inbound) = WsConn::start(io, p, &readable, idle).await;
    let first = if o.stdout {
        ws_frame::STDOUT
    } else if o.stderr {
        ws_frame::STDERR
    } else {
        ws_frame::ERROR
    };
    let _ = conn.tx(first).announce().await;
    let on = |on: bool, channel| on.then(|| Sink::Ws(conn.tx(channel)));
    let streams = Streams {
        error: Some(Sink::Ws(conn.tx(ws_frame::ERROR))),
        stdin: inbound.remove(&ws_frame::STDIN),
        stdout: on(o.stdout, ws_frame::STDOUT),
        stderr: on(o.stderr, ws_frame::STDERR),
        resize: inbound.remove(&ws_frame::RESIZE),
    };
    Opened {
        streams,
        link: Link::Ws(conn),
        status: p.remotecommand(),
    }
}

#[cfg(test)]
mod tests;
