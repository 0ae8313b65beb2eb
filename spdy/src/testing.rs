//! A SPDY client for tests, speaking as kubectl does: odd stream ids, one compression context
//! per direction.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

use super::{
    frame::{self, FLAG_FIN, Frame},
    zlib::{Deflater, Inflater},
};

/// Every wait in these tests.
pub const T: Duration = Duration::from_secs(10);

/// The client end of a connection.
pub struct Client {
    pub io: DuplexStream,
    deflater: Deflater,
    inflater: Inflater,
    buf: BytesMut,
    next_id: u32,
}

impl Client {
    /// A client and the server's end of the pipe.
    pub fn pair() -> (Self, DuplexStream) {
        let (a, b) = tokio::io::duplex(1 << 20);
        let c = Self {
            io: a,
            deflater: Deflater::default(),
            inflater: Inflater::default(),
            buf: BytesMut::new(),
            next_id: 1,
        };
        (c, b)
    }

    /// The id of the next stream opened.
    pub fn set_next_id(&mut self, id: u32) {
        self.next_id = id;
    }

    pub async fn send(&mut self, f: Frame) {
        let mut out = BytesMut::new();
        frame::encode(&f, &mut out);
        self.io.write_all(&out).await.unwrap();
    }

    /// Opens a stream with these headers; returns its id.
    pub async fn open_with(&mut self, headers: &[(&str, &str)], flags: u8) -> u32 {
        let id = self.next_id;
        self.next_id += 2;
        let block = self.deflater.block(headers);
        self.send(Frame::SynStream {
            stream_id: id,
            associated_to: 0,
            priority: 0,
            flags,
            headers: Bytes::from(block),
        })
        .await;
        id
    }

    /// Opens a stream of this `streamtype`.
    pub async fn open(&mut self, streamtype: &str) -> u32 {
        self.open_with(&[("streamtype", streamtype)], 0).await
    }

    pub async fn data(&mut self, id: u32, data: &[u8], fin: bool) {
        self.send(Frame::Data {
            stream_id: id,
            flags: if fin { FLAG_FIN } else { 0 },
            data: Bytes::copy_from_slice(data),
        })
        .await;
    }

    /// The next frame, `None` at end of file. SYN_REPLY blocks are checked to inflate.
    pub async fn next(&mut self) -> Option<Frame> {
        loop {
            if let Some((f, used)) = frame::decode(&self.buf).unwrap() {
                let _ = self.buf.split_to(used);
                if let Frame::SynReply { headers, .. } = &f {
                    assert_eq!(self.inflater.headers(headers).unwrap(), vec![]);
                }
                return Some(f);
            }
            let n = tokio::time::timeout(T, self.io.read_buf(&mut self.buf))
                .await
                .expect("server silent")
                .unwrap_or(0);
            if n == 0 {
                return None;
            }
        }
    }

    /// Frames until end of file or GOAWAY (included).
    pub async fn until_goaway(&mut self) -> Vec<Frame> {
        let mut v = Vec::new();
        while let Some(f) = self.next().await {
            let last = matches!(f, Frame::GoAway { .. });
            v.push(f);
            if last {
                break;
            }
        }
        v
    }
}

/// The bytes of the DATA frames of stream `id`, and whether it was FINished.
pub fn stream_data(frames: &[Frame], id: u32) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    let mut fin = false;
    for f in frames {
        if let Frame::Data {
            stream_id,
            flags,
            data,
        } = f
            && *stream_id == id
        {
            out.extend_from_slice(data);
            fin |= flags & FLAG_FIN != 0;
        }
    }
    (out, fin)
}
