//! One server-side SPDY/3.1 connection over an upgraded HTTP connection, behaving as Go's
//! spdystream does toward kubectl (docs/reference/kubelet-api.md §5.2): every stream the client
//! opens is accepted at once with an empty SYN_REPLY; client pings are echoed; SETTINGS and
//! WINDOW_UPDATE are ignored and DATA is sent without waiting for a window (in frames of at most 32
//! KiB); FIN half-closes; a stream's data waits in a small queue and, when it is full, the socket
//! is not read (TCP is the backpressure, as in Go).
//!
//! The connection is closed — and [`Conn::closed`] resolves — when the client closes the
//! socket, sends GOAWAY, breaks the protocol, or nothing moved either way for the idle
//! timeout. What the streams mean is the remotecommand module's business.

use std::{
    collections::HashMap,
    sync::{
        Arc,
        atomic::{AtomicU32, Ordering},
    },
    time::Duration,
};

use bytes::{Bytes, BytesMut};
use tokio::{
    io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt},
    sync::{mpsc, watch},
    task::JoinHandle,
    time::Instant,
};
use tracing::{debug, trace};

use super::{
    activity::Activity,
    frame::{self, FLAG_FIN, Frame, RstStatus},
    zlib::{Deflater, Headers, Inflater},
};

/// Largest DATA payload sent (Go's `io.Copy` buffer).
pub const MAX_DATA: usize = 32 * 1024;
/// Frames a stream's reader may have queued before the socket is no longer read.
const STREAM_QUEUE: usize = 16;
/// Frames waiting to be written.
const OUT_QUEUE: usize = 64;

/// A stream the client opened (already accepted).
#[derive(Debug)]
pub struct NewStream {
    pub id: u32,
    /// Its headers (`streamtype`, `port`, `requestid`).
    pub headers: Headers,
    /// Its data; ends at the client's FIN or RST_STREAM, or when the connection closes.
    pub data: mpsc::Receiver<Bytes>,
}

/// Writes to one stream.
#[derive(Debug, Clone)]
pub struct StreamTx {
    id: u32,
    out: mpsc::Sender<Frame>,
}

/// The connection is gone; nothing more can be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the SPDY connection is closed")]
pub struct Closed;

impl StreamTx {
    /// Sends `bytes` as DATA frames.
    ///
    /// # Errors
    /// [`Closed`] when the connection is gone.
    pub async fn write(&self, bytes: &[u8]) -> Result<(), Closed> {
        for chunk in bytes.chunks(MAX_DATA) {
            self.send(0, Bytes::copy_from_slice(chunk)).await?;
        }
        Ok(())
    }

    /// Half-closes this side (an empty DATA frame with FIN).
    ///
    /// # Errors
    /// [`Closed`] when the connection is gone.
    pub async fn finish(&self) -> Result<(), Closed> {
        self.send(FLAG_FIN, Bytes::new()).await
    }

    /// Resets the stream (both directions).
    pub async fn reset(&self, status: RstStatus) {
        let f = Frame::RstStream {
            stream_id: self.id,
            status,
        };
        let _ = self.out.send(f).await;
    }

    async fn send(&self, flags: u8, data: Bytes) -> Result<(), Closed> {
        let f = Frame::Data {
            stream_id: self.id,
            flags,
            data,
        };
        self.out.send(f).await.map_err(|_| Closed)
    }
}

/// A served SPDY connection.
pub struct Conn {
    out: mpsc::Sender<Frame>,
    incoming: mpsc::Receiver<NewStream>,
    closed: watch::Receiver<bool>,
    last_client_id: Arc<AtomicU32>,
    reader: AbortOnDrop,
    writer: JoinHandle<()>,
}

/// Stops the read loop when the connection is dropped without [`Conn::shutdown`].
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Conn {
    /// Starts serving `io` (the upgraded connection) with this idle timeout.
    pub fn start<IO>(io: IO, idle: Duration) -> Self
    where
        IO: AsyncRead + AsyncWrite + Send + 'static,
    {
        let (rd, wr) = tokio::io::split(io);
        let (out_tx, out_rx) = mpsc::channel(OUT_QUEUE);
        let (in_tx, in_rx) = mpsc::channel(8);
        let (closed_tx, closed_rx) = watch::channel(false);
        let activity = Activity::new();
        let last_client_id = Arc::new(AtomicU32::new(0));
        let writer = tokio::spawn(write_loop(wr, out_rx, activity.clone()));
        let reader = tokio::spawn(
            Reader {
                out: out_tx.clone(),
                incoming: in_tx,
                streams: HashMap::new(),
                inflater: Inflater::default(),
                activity,
                idle,
                last_id: last_client_id.clone(),
            }
            .run(rd, closed_tx),
        );
        Self {
            out: out_tx,
            incoming: in_rx,
            closed: closed_rx,
            last_client_id,
            reader: AbortOnDrop(reader),
            writer,
        }
    }

    /// The next stream the client opens; `None` once the connection is closed.
    pub async fn accept(&mut self) -> Option<NewStream> {
        self.incoming.recv().await
    }

    /// A writer for stream `id`.
    pub fn tx(&self, id: u32) -> StreamTx {
        StreamTx {
            id,
            out: self.out.clone(),
        }
    }

    /// Resolves when the client is gone (socket closed, GOAWAY, protocol error, idle).
    pub fn closed(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut rx = self.closed.clone();
        async move {
            let _ = rx.wait_for(|c| *c).await;
        }
    }

    /// Ends the connection as kubelet does: GOAWAY, then up to `drain` for the client to
    /// reset its streams and hang up (closing with unread client bytes could turn into a TCP
    /// reset that loses the tail of the output), then the socket is closed.
    pub async fn shutdown(self, drain: Duration) {
        let last_good = self.last_client_id.load(Ordering::Relaxed);
        let _ = self
            .out
            .send(Frame::GoAway {
                last_good,
                status: 0,
            })
            .await;
        let closed = self.closed();
        let Self {
            out,
            incoming,
            reader,
            writer,
            ..
        } = self;
        drop(incoming);
        let _ = tokio::time::timeout(drain, closed).await;
        drop(out);
        drop(reader);
        // The writer ends once every sender is gone; it flushes and shuts the socket down.
        let _ = tokio::time::timeout(drain, writer).await;
    }
}

// === impl Reader ===

struct Reader {
    out: mpsc::Sender<Frame>,
    incoming: mpsc::Sender<NewStream>,
    streams: HashMap<u32, mpsc::Sender<Bytes>>,
    inflater: Inflater,
    activity: Activity,
    idle: Duration,
    last_id: Arc<AtomicU32>,
}

/// Why reading stopped.
#[derive(Debug)]
enum End {
    Eof,
    GoAway,
    Idle,
    Io,
    Protocol,
}

impl Reader {
    async fn run<R: AsyncRead + Unpin>(mut self, mut rd: R, closed: watch::Sender<bool>) {
        let end = self.read_all(&mut rd).await;
        debug!(end = ?end, "spdy connection closed by the client side");
        if let End::Protocol = end {
            let f = Frame::GoAway {
                last_good: self.last_id.load(Ordering::Relaxed),
                status: 1,
            };
            let _ = self.out.try_send(f);
        }
        // Every stream's reader sees its end, then the watchers see the close.
        self.streams.clear();
        let _ = closed.send(true);
    }

    async fn read_all<R: AsyncRead + Unpin>(&mut self, rd: &mut R) -> End {
        let mut buf = BytesMut::with_capacity(64 * 1024);
        loop {
            loop {
                match frame::decode(&buf) {
                    Ok(Some((f, used))) => {
                        let _ = buf.split_to(used);
                        if let Some(end) = self.handle(f).await {
                            return end;
                        }
                    }
                    Ok(None) => break,
                    Err(error) => return protocol_error(&error),
                }
            }
            let idle_at = self.activity.idle_at(self.idle);
            tokio::select! {
                r = rd.read_buf(&mut buf) => match r {
                    Ok(0) => return End::Eof,
                    Ok(_) => self.activity.touch(),
                    Err(error) => {
                        debug!(%error, "spdy read failed");
                        return End::Io;
                    }
                },
                () = tokio::time::sleep_until(idle_at) => {
                    if self.activity.idle_at(self.idle) <= Instant::now() {
                        return End::Idle;
                    }
                }
            }
        }
    }

    async fn handle(&mut self, f: Frame) -> Option<End> {
        trace!(frame = ?FrameKind(&f), "spdy frame in");
        match f {
            Frame::SynStream {
                stream_id,
                flags,
                headers,
                ..
            } => {
                let headers = match self.inflater.headers(&headers) {
                    Ok(h) => h,
                    Err(error) => return Some(protocol_error(&error)),
                };
                let last = self.last_id.load(Ordering::Relaxed);
                if stream_id <= last || stream_id % 2 == 0 {
                    let status = RstStatus::ProtocolError;
                    let _ = self.out.send(Frame::RstStream { stream_id, status }).await;
                    return None;
                }
                self.last_id.store(stream_id, Ordering::Relaxed);
                let reply = Frame::SynReply {
                    stream_id,
                    flags: 0,
                    headers: Bytes::new(),
                };
                if self.out.send(reply).await.is_err() {
                    return Some(End::Eof);
                }
                let (tx, rx) = mpsc::channel(STREAM_QUEUE);
                if flags & FLAG_FIN == 0 {
                    self.streams.insert(stream_id, tx);
                }
                let s = NewStream {
                    id: stream_id,
                    headers,
                    data: rx,
                };
                // Nobody accepting any more: the stream is dropped, the connection goes on.
                let _ = self.incoming.send(s).await;
            }
            Frame::Data {
                stream_id,
                flags,
                data,
            } => {
                if let Some(tx) = self.streams.get(&stream_id)
                    && !data.is_empty()
                    && tx.send(data).await.is_err()
                {
                    self.streams.remove(&stream_id);
                }
                if flags & FLAG_FIN != 0 {
                    self.streams.remove(&stream_id);
                }
            }
            Frame::RstStream { stream_id, .. } => {
                self.streams.remove(&stream_id);
            }
            Frame::Headers {
                headers, stream_id, ..
            } => {
                // Keeps the shared compression context in step; the values are not used.
                if let Err(error) = self.inflater.headers(&headers) {
                    return Some(protocol_error(&error));
                }
                trace!(stream_id, "headers frame ignored");
            }
            Frame::Ping(id) if id % 2 == 1 => {
                let _ = self.out.send(Frame::Ping(id)).await;
            }
            Frame::GoAway { .. } => return Some(End::GoAway),
            Frame::SynReply { .. } => return Some(protocol_error(&"a SYN_REPLY from the client")),
            Frame::Ping(_) | Frame::Settings | Frame::WindowUpdate { .. } | Frame::Unknown(_) => {}
        }
        None
    }
}

/// Logs why the client broke the protocol; the connection ends.
fn protocol_error(error: &dyn std::fmt::Display) -> End {
    debug!(%error, "spdy protocol error");
    End::Protocol
}

/// A frame's type for traces, without its payload.
struct FrameKind<'a>(&'a Frame);

impl std::fmt::Debug for FrameKind<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Frame::Data {
                stream_id,
                flags,
                data,
            } => write!(f, "DATA({stream_id}, flags {flags}, {} bytes)", data.len()),
            other => {
                let s = format!("{other:?}");
                f.write_str(s.split(['{', '(']).next().unwrap_or_default().trim())
            }
        }
    }
}

// === write loop ===

/// Writes frames in order; compresses SYN_REPLY header blocks with the connection's one
/// compression context. Ends when every sender is gone or the socket fails, then shuts the
/// socket's write side down.
async fn write_loop<W: AsyncWrite + Unpin>(
    mut wr: W,
    mut rx: mpsc::Receiver<Frame>,
    activity: Activity,
) {
    let mut deflater = Deflater::default();
    let mut buf = BytesMut::with_capacity(MAX_DATA + 64);
    // A SYN_REPLY's (empty) header block is compressed here, in write order, so the
    // client's one decompression context stays in step.
    let mut encode = |mut f: Frame, buf: &mut BytesMut| {
        if let Frame::SynReply { headers, .. } = &mut f {
            *headers = Bytes::from(deflater.block(&[]));
        }
        frame::encode(&f, buf);
    };
    while let Some(f) = rx.recv().await {
        buf.clear();
        encode(f, &mut buf);
        // Batch what is already queued into one write.
        while buf.len() < MAX_DATA {
            let Ok(next) = rx.try_recv() else { break };
            encode(next, &mut buf);
        }
        if let Err(error) = async {
            wr.write_all(&buf).await?;
            wr.flush().await
        }
        .await
        {
            debug!(%error, "spdy write failed");
            return;
        }
        activity.touch();
    }
    let _ = wr.shutdown().await;
}

#[cfg(test)]
mod tests;
