//! PURE: the WebSocket channel protocols of exec and attach (docs/reference/kubelet-api.md §5.6) —
//! which subprotocol is agreed, the `Sec-WebSocket-Accept` answer, and how channel bytes map onto
//! messages: binary `[channel, bytes…]`, or text `'0'+channel` followed by base64 for the `base64`
//! variants; `v5.channel.k8s.io` adds the client's close signal `[0xFF, channel]`.

use base64::{Engine, engine::general_purpose::STANDARD};
use bytes::{BufMut, Bytes, BytesMut};
use tokio_tungstenite::tungstenite::Message;

use crate::kubelet_api::stream::remotecommand::protocol::Protocol;

/// Channel of the client's stdin.
pub(crate) const STDIN: u8 = 0;
/// Channel of the command's stdout.
pub(crate) const STDOUT: u8 = 1;
/// Channel of the command's stderr.
pub(crate) const STDERR: u8 = 2;
/// Channel of the status (error) written at the end.
pub(crate) const ERROR: u8 = 3;
/// Channel of the client's terminal sizes.
pub(crate) const RESIZE: u8 = 4;
/// The v5 close signal's first byte: `[0xFF, channel]` half-closes `channel`.
const CLOSE_SIGNAL: u8 = 0xFF;

/// A WebSocket subprotocol served for exec and attach.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WsProtocol {
    /// `v5.channel.k8s.io`: binary, v4 status, close signal.
    V5,
    /// `v4.channel.k8s.io`: binary, v4 status.
    V4,
    /// `v4.base64.channel.k8s.io`: text with base64, v4 status.
    V4Base64,
    /// `channel.k8s.io`: binary, the status as plain text on failure only.
    V1,
    /// `base64.channel.k8s.io`: text with base64, plain-text status.
    V1Base64,
}

/// Served subprotocols, preferred first: the server's order decides, as axum's does.
pub(crate) const SERVED: [WsProtocol; 5] = [
    WsProtocol::V5,
    WsProtocol::V4,
    WsProtocol::V4Base64,
    WsProtocol::V1,
    WsProtocol::V1Base64,
];

impl WsProtocol {
    /// The `Sec-WebSocket-Protocol` value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::V5 => "v5.channel.k8s.io",
            Self::V4 => "v4.channel.k8s.io",
            Self::V4Base64 => "v4.base64.channel.k8s.io",
            Self::V1 => "channel.k8s.io",
            Self::V1Base64 => "base64.channel.k8s.io",
        }
    }

    /// The remotecommand version whose status text and stream set this protocol shares.
    pub(crate) fn remotecommand(self) -> Protocol {
        match self {
            Self::V5 | Self::V4 | Self::V4Base64 => Protocol::V4,
            Self::V1 | Self::V1Base64 => Protocol::V1,
        }
    }

    fn base64(self) -> bool {
        matches!(self, Self::V4Base64 | Self::V1Base64)
    }

    /// The highest channel a message of this protocol can name: a base64 message names it
    /// with one ASCII character counted from `'0'` (so 79, `'0'` + 79 being the last ASCII
    /// character), a binary one with a byte (v5 keeps 255 for its close signal).
    pub(crate) fn max_channel(self) -> u8 {
        match self {
            Self::V4Base64 | Self::V1Base64 => 0x7f - b'0',
            Self::V5 => 0xfe,
            Self::V4 | Self::V1 => 0xff,
        }
    }
}

/// Subprotocols served for the legacy WebSocket port-forward (kubelet's v4 ones).
pub(crate) const FORWARD_SERVED: [WsProtocol; 2] = [WsProtocol::V4, WsProtocol::V4Base64];

/// The protocol to speak given the client's `Sec-WebSocket-Protocol` values (one header line
/// each, or comma-separated): the first of `served` the client offered; `None` when nothing
/// served was offered.
pub(crate) fn negotiate_among<'a>(
    served: &[WsProtocol],
    offers: impl IntoIterator<Item = &'a str>,
) -> Option<WsProtocol> {
    let offered: Vec<&str> = offers
        .into_iter()
        .flat_map(|l| l.split(','))
        .map(str::trim)
        .collect();
    served
        .iter()
        .copied()
        .find(|p| offered.iter().any(|o| *o == p.as_str()))
}

/// RFC 6455's `Sec-WebSocket-Accept` for the client's `Sec-WebSocket-Key`.
pub(crate) fn accept_key(key: &str) -> String {
    const GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY);
    ctx.update(key.trim().as_bytes());
    ctx.update(GUID.as_bytes());
    STANDARD.encode(ctx.finish())
}

/// The message carrying `data` on `channel`, which is at most [`WsProtocol::max_channel`].
pub(crate) fn encode(p: WsProtocol, channel: u8, data: &[u8]) -> Message {
    if p.base64() {
        let mut s = String::with_capacity(1 + data.len().div_ceil(3) * 4);
        s.push(char::from(b'0' + channel));
        STANDARD.encode_string(data, &mut s);
        Message::text(s)
    } else {
        let mut b = BytesMut::with_capacity(1 + data.len());
        b.put_u8(channel);
        b.put_slice(data);
        Message::Binary(b.freeze())
    }
}

/// What one client message means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Incoming {
    /// Bytes for `channel` (possibly none).
    Data(u8, Bytes),
    /// The client half-closed `channel` (v5).
    Close(u8),
    /// Nothing for the session: control frames, an empty message.
    Nothing,
}

/// Why a client message breaks the protocol (the connection ends).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum FrameError {
    /// A close signal that is not exactly `[0xFF, channel]`.
    #[error("close signal of {0} bytes (want 2)")]
    CloseSignal(usize),
    /// A base64 message whose channel or payload does not decode.
    #[error("base64 message does not decode")]
    Base64,
}

/// PURE: the meaning of `msg` under protocol `p`. Text and binary messages are read alike,
/// as kubelet reads them: the protocol, not the message type, says whether the bytes are
/// `[channel, bytes…]` or an ASCII channel digit and base64 (python-kubernetes'
/// `write_stdin("…")` sends text on `v4.channel.k8s.io`).
///
/// # Errors
/// [`FrameError`] for a message the protocol does not allow.
pub(crate) fn decode(p: WsProtocol, msg: &Message) -> Result<Incoming, FrameError> {
    let bytes = match msg {
        Message::Binary(b) => b.clone(),
        Message::Text(t) => Bytes::from(t.clone()),
        _ => return Ok(Incoming::Nothing),
    };
    let Some(&first) = bytes.first() else {
        return Ok(Incoming::Nothing);
    };
    let (channel, payload) = if p.base64() {
        // The channel is one ASCII character: the first byte of a longer UTF-8 character is
        // not a channel.
        let channel = first
            .checked_sub(b'0')
            .filter(|_| first.is_ascii())
            .ok_or(FrameError::Base64)?;
        let data = STANDARD
            .decode(&bytes[1..])
            .map_err(|_| FrameError::Base64)?;
        (channel, Bytes::from(data))
    } else {
        (first, bytes.slice(1..))
    };
    if channel == CLOSE_SIGNAL && p == WsProtocol::V5 {
        return match payload.as_ref() {
            [c] => Ok(Incoming::Close(*c)),
            other => Err(FrameError::CloseSignal(other.len() + 1)),
        };
    }
    Ok(Incoming::Data(channel, payload))
}

#[cfg(test)]
mod tests;
