//! PURE: SPDY/3.1 frames as Go's spdystream writes and reads them
//! (docs/reference/kubelet-api.md §5.2): an 8-byte header, big-endian integers, 24-bit lengths.
//! Header blocks stay compressed here; [`super::zlib`] turns them into names and values.

use bytes::{Buf, BufMut, Bytes, BytesMut};

/// The SPDY version this codec speaks.
const VERSION: u16 = 3;
/// Control-frame bit of the first byte.
const CONTROL: u8 = 0x80;
/// `FLAG_FIN`: the sender's half of the stream is closed.
pub const FLAG_FIN: u8 = 0x01;
/// Largest payload a 24-bit length can carry.
pub const MAX_LENGTH: usize = 0x00ff_ffff;

/// `RST_STREAM` status codes used here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RstStatus {
    /// 1: the peer broke the protocol.
    ProtocolError,
    /// 2: a frame for a stream that is not open.
    InvalidStream,
    /// 3: the stream is refused (after GOAWAY).
    RefusedStream,
    /// 5: the stream is no longer wanted.
    Cancel,
    /// 6: a failure on this side.
    InternalError,
    /// Any other code.
    Other(u32),
}

impl RstStatus {
    /// The code on the wire.
    pub fn code(self) -> u32 {
        match self {
            Self::ProtocolError => 1,
            Self::InvalidStream => 2,
            Self::RefusedStream => 3,
            Self::Cancel => 5,
            Self::InternalError => 6,
            Self::Other(c) => c,
        }
    }

    /// The status of a code on the wire.
    pub fn from_code(code: u32) -> Self {
        match code {
            1 => Self::ProtocolError,
            2 => Self::InvalidStream,
            3 => Self::RefusedStream,
            5 => Self::Cancel,
            6 => Self::InternalError,
            c => Self::Other(c),
        }
    }
}

/// One frame. Header blocks are zlib-compressed bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A new stream from the peer.
    SynStream {
        /// Stream id (odd from a client).
        stream_id: u32,
        /// Associated stream (0 for none).
        associated_to: u32,
        /// Priority, 0 (highest) to 7.
        priority: u8,
        /// [`FLAG_FIN`], and `0x02` UNIDIRECTIONAL (not used by kubectl).
        flags: u8,
        /// Compressed header block.
        headers: Bytes,
    },
    /// Acceptance of a stream.
    SynReply {
        stream_id: u32,
        /// [`FLAG_FIN`].
        flags: u8,
        /// Compressed header block.
        headers: Bytes,
    },
    /// Abnormal end of a stream, both directions.
    RstStream {
        stream_id: u32,
        /// Why.
        status: RstStatus,
    },
    /// Settings (spdystream ignores them, and so do we).
    Settings,
    /// A ping to echo (when the peer started it).
    Ping(u32),
    /// The sender accepts no new streams.
    GoAway {
        /// Highest stream id the sender processed.
        last_good: u32,
        /// 0 OK, 1 PROTOCOL_ERROR, 2 INTERNAL_ERROR.
        status: u32,
    },
    /// More headers for a stream.
    Headers {
        stream_id: u32,
        /// [`FLAG_FIN`].
        flags: u8,
        /// Compressed header block.
        headers: Bytes,
    },
    /// Flow-control credit (ignored: spdystream has no flow control).
    WindowUpdate {
        stream_id: u32,
        /// Credit.
        delta: u32,
    },
    /// Stream payload.
    Data {
        stream_id: u32,
        /// [`FLAG_FIN`].
        flags: u8,
        /// Payload.
        data: Bytes,
    },
    /// A control frame type this codec does not know; skipped.
    Unknown(u16),
}

/// Why bytes are not a frame.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// A control frame of another SPDY version.
    #[error("unsupported SPDY version {0}")]
    Version(u16),
    /// A control frame shorter than its type requires.
    #[error("control frame type {kind} has {len} payload bytes, too few")]
    Short {
        /// Frame type.
        kind: u16,
        /// Payload length.
        len: usize,
    },
}

/// Decodes the frame at the start of `buf`: `Ok(None)` until the whole frame is there,
/// otherwise the frame and the bytes it used.
///
/// # Errors
/// [`FrameError`] for a frame that can never be read (the connection must end).
pub fn decode(buf: &[u8]) -> Result<Option<(Frame, usize)>, FrameError> {
    if buf.len() < 8 {
        return Ok(None);
    }
    let len = usize::from(buf[5]) << 16 | usize::from(buf[6]) << 8 | usize::from(buf[7]);
    if buf.len() < 8 + len {
        return Ok(None);
    }
    let flags = buf[4];
    let mut p = Bytes::copy_from_slice(&buf[8..8 + len]);
    let used = 8 + len;
    if buf[0] & CONTROL == 0 {
        let stream_id = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
        return Ok(Some((
            Frame::Data {
                stream_id,
                flags,
                data: p,
            },
            used,
        )));
    }
    let version = u16::from_be_bytes([buf[0] & !CONTROL, buf[1]]);
    if version != VERSION {
        return Err(FrameError::Version(version));
    }
    let kind = u16::from_be_bytes([buf[2], buf[3]]);
    let need = match kind {
        1 => 10,
        2 | 8 => 4,
        3 | 7 | 9 => 8,
        4 | 6 => 4,
        _ => 0,
    };
    if len < need {
        return Err(FrameError::Short { kind, len });
    }
    let id = |p: &mut Bytes| p.get_u32() & 0x7fff_ffff;
    let frame = match kind {
        1 => {
            let stream_id = id(&mut p);
            let associated_to = id(&mut p);
            let priority = p.get_u8() >> 5;
            let _slot = p.get_u8();
            Frame::SynStream {
                stream_id,
                associated_to,
                priority,
                flags,
                headers: p,
            }
        }
        2 => Frame::SynReply {
            stream_id: id(&mut p),
            flags,
            headers: p,
        },
        3 => Frame::RstStream {
            stream_id: id(&mut p),
            status: RstStatus::from_code(p.get_u32()),
        },
        4 => Frame::Settings,
        6 => Frame::Ping(p.get_u32()),
        7 => Frame::GoAway {
            last_good: id(&mut p),
            status: p.get_u32(),
        },
        8 => Frame::Headers {
            stream_id: id(&mut p),
            flags,
            headers: p,
        },
        9 => Frame::WindowUpdate {
            stream_id: id(&mut p),
            delta: p.get_u32() & 0x7fff_ffff,
        },
        other => Frame::Unknown(other),
    };
    Ok(Some((frame, used)))
}

fn control(out: &mut BytesMut, kind: u16, flags: u8, payload: &[u8]) {
    out.put_u16(u16::from(CONTROL) << 8 | VERSION);
    out.put_u16(kind);
    put_flags_len(out, flags, payload.len());
    out.put_slice(payload);
}

fn put_flags_len(out: &mut BytesMut, flags: u8, len: usize) {
    debug_assert!(len <= MAX_LENGTH);
    out.put_u8(flags);
    let len = u32::try_from(len.min(MAX_LENGTH)).unwrap_or(0);
    out.put_slice(&len.to_be_bytes()[1..]);
}

/// Appends the wire form of `frame` to `out`. A payload longer than [`MAX_LENGTH`] is the
/// caller's bug (DATA is chunked before it gets here).
pub fn encode(frame: &Frame, out: &mut BytesMut) {
    let mut p = BytesMut::new();
    match frame {
        Frame::SynStream {
            stream_id,
            associated_to,
            priority,
            flags,
            headers,
        } => {
            p.put_u32(*stream_id);
            p.put_u32(*associated_to);
            p.put_u8(priority << 5);
            p.put_u8(0);
            p.put_slice(headers);
            control(out, 1, *flags, &p);
        }
        Frame::SynReply {
            stream_id,
            flags,
            headers,
        } => {
            p.put_u32(*stream_id);
            p.put_slice(headers);
            control(out, 2, *flags, &p);
        }
        Frame::RstStream { stream_id, status } => {
            p.put_u32(*stream_id);
            p.put_u32(status.code());
            control(out, 3, 0, &p);
        }
        Frame::Settings => {
            p.put_u32(0);
            control(out, 4, 0, &p);
        }
        Frame::Ping(id) => control(out, 6, 0, &id.to_be_bytes()),
        Frame::GoAway { last_good, status } => {
            p.put_u32(*last_good);
            p.put_u32(*status);
            control(out, 7, 0, &p);
        }
        Frame::Headers {
            stream_id,
            flags,
            headers,
        } => {
            p.put_u32(*stream_id);
            p.put_slice(headers);
            control(out, 8, *flags, &p);
        }
        Frame::WindowUpdate { stream_id, delta } => {
            p.put_u32(*stream_id);
            p.put_u32(*delta);
            control(out, 9, 0, &p);
        }
        Frame::Data {
            stream_id,
            flags,
            data,
        } => {
            out.put_u32(stream_id & 0x7fff_ffff);
            put_flags_len(out, *flags, data.len());
            out.put_slice(data);
        }
        Frame::Unknown(kind) => control(out, *kind, 0, &[]),
    }
}

#[cfg(test)]
mod tests;
