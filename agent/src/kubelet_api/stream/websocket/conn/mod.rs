//! One server-side WebSocket connection for exec, attach or port-forward
//! (docs/reference/kubelet-api.md §5.6–§5.7), the WebSocket counterpart of [`super::conn`]: client
//! messages are split by channel — for exec stdin (channel 0) and terminal sizes (channel 4), for
//! port-forward each port's data channel — each into a small queue, and when a queue is full the
//! socket is not read (TCP is the backpressure, as with SPDY); a v5 close signal `[0xFF, ch]` ends
//! channel `ch`; messages for other channels are dropped. Pings are answered by the WebSocket layer
//! as it reads. Writes go through one task in order.
//!
//! The connection is closed — and [`WsConn::closed`] resolves — when the client closes the
//! socket or sends Close, breaks the protocol, or nothing moved either way for the idle
//! timeout. What the channels mean is the session's business.

use std::{collections::HashMap, time::Duration};

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use tokio::{
    io::{AsyncRead, AsyncWrite},
    sync::{mpsc, watch},
    task::JoinHandle,
    time::Instant,
};
use tokio_tungstenite::{
    WebSocketStream,
    tungstenite::{
        Message,
        protocol::{CloseFrame, Role, WebSocketConfig, frame::coding::CloseCode},
    },
};
use tracing::debug;

use super::frame::{self as ws_frame, Incoming, WsProtocol};
use spdy::{
    activity::Activity,
    conn::{Closed, MAX_DATA},
};

/// Messages a channel's reader may have queued before the socket is no longer read.
const CHANNEL_QUEUE: usize = 16;
/// Messages waiting to be written.
const OUT_QUEUE: usize = 64;
/// Largest client message accepted (stdin arrives in client-go's 32 KiB reads).
const MAX_MESSAGE: usize = 1 << 20;

/// What the writer task sends.
#[derive(Debug)]
enum Out {
    Data(u8, Bytes),
    Close,
}

/// Writes to one server → client channel.
#[derive(Debug, Clone)]
pub(crate) struct ChannelTx {
    channel: u8,
    out: mpsc::Sender<Out>,
}

impl ChannelTx {
    /// Sends `bytes` on the channel, in messages of at most 32 KiB; nothing for no bytes.
    ///
    /// # Errors
    /// [`Closed`] when the connection is gone.
    pub(crate) async fn write(&self, bytes: &[u8]) -> Result<(), Closed> {
        for chunk in bytes.chunks(MAX_DATA) {
            self.send(Bytes::copy_from_slice(chunk)).await?;
        }
        Ok(())
    }

    /// Sends one empty message on the channel: kubelet's "connection established" signal.
    ///
    /// # Errors
    /// [`Closed`] when the connection is gone.
    pub(crate) async fn announce(&self) -> Result<(), Closed> {
        self.send(Bytes::new()).await
    }

    async fn send(&self, data: Bytes) -> Result<(), Closed> {
        self.out
            .send(Out::Data(self.channel, data))
            .await
            .map_err(|_| Closed)
    }
}

/// The client → server channels a session reads, by channel number; each ends at the v5
/// close signal or when the connection closes.
pub(crate) type Inbound = HashMap<u8, mpsc::Receiver<Bytes>>;

/// A served WebSocket connection.
pub(crate) struct WsConn {
    out: mpsc::Sender<Out>,
    closed: watch::Receiver<bool>,
    reader: AbortOnDrop,
    writer: JoinHandle<()>,
}

/// Stops the read loop when the connection is dropped without [`WsConn::shutdown`].
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl WsConn {
    /// Starts serving `io` (the upgraded connection) with protocol `p`; `readable` are the
    /// client channels the session reads.
    pub(crate) async fn start<IO>(
        io: IO,
        p: WsProtocol,
        readable: &[u8],
        idle: Duration,
    ) -> (Self, Inbound)
    where
        IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let mut config = WebSocketConfig::default();
        config.max_message_size = Some(MAX_MESSAGE);
        config.max_frame_size = Some(MAX_MESSAGE);
        let ws = WebSocketStream::from_raw_socket(io, Role::Server, Some(config)).await;
        let (sink, stream) = ws.split();
        let (out_tx, out_rx) = mpsc::channel(OUT_QUEUE);
        let (closed_tx, closed_rx) = watch::channel(false);
        let activity = Activity::new();
        let mut senders = HashMap::new();
        let mut inbound = Inbound::new();
        for &channel in readable {
            let (tx, rx) = mpsc::channel(CHANNEL_QUEUE);
            senders.insert(channel, tx);
            inbound.insert(channel, rx);
        }
        let writer = tokio::spawn(write_loop(sink, out_rx, p, activity.clone()));
        let reader = Reader {
            p,
            channels: senders,
            activity,
            idle,
        };
        let reader = tokio::spawn(reader.run(stream, closed_tx));
        let conn = Self {
            out: out_tx,
            closed: closed_rx,
            reader: AbortOnDrop(reader),
            writer,
        };
        (conn, inbound)
    }

    /// A writer for `channel`.
    pub(crate) fn tx(&self, channel: u8) -> ChannelTx {
        ChannelTx {
            channel,
            out: self.out.clone(),
        }
    }

    /// Resolves when the client is gone (socket closed, Close, protocol error, idle).
    pub(crate) fn closed(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut rx = self.closed.clone();
        async move {
            let _ = rx.wait_for(|c| *c).await;
        }
    }

    /// Ends the connection after the status: a Close frame (1000), then up to `drain` for the
    /// client's Close in reply, then the socket is closed.
    pub(crate) async fn shutdown(self, drain: Duration) {
        let _ = self.out.send(Out::Close).await;
        let closed = self.closed();
        let Self {
            out,
            reader,
            writer,
            ..
        } = self;
        let _ = tokio::time::timeout(drain, closed).await;
        drop(out);
        drop(reader);
        let _ = tokio::time::timeout(drain, writer).await;
    }
}

// === impl Reader ===

struct Reader {
    p: WsProtocol,
    channels: HashMap<u8, mpsc::Sender<Bytes>>,
    activity: Activity,
    idle: Duration,
}

impl Reader {
    async fn run<S>(mut self, mut stream: S, closed: watch::Sender<bool>)
    where
        S: futures::Stream<Item = Result<Message, tokio_tungstenite::tungstenite::Error>> + Unpin,
    {
        let why = self.read_all(&mut stream).await;
        debug!(why, "websocket connection closed by the client side");
        self.channels.clear();
        let _ = closed.send(true);
    }

    async fn read_all<S>(&mut self, stream: &mut S) -> &'static str
    where
        S: futures::Stream<Item = Result<Message, tokio_tungstenite::tungstenite::Error>> + Unpin,
    {
        loop {
            let idle_at = self.activity.idle_at(self.idle);
            let msg = tokio::select! {
                m = stream.next() => m,
                () = tokio::time::sleep_until(idle_at) => {
                    if self.activity.idle_at(self.idle) <= Instant::now() {
                        return "idle";
                    }
                    continue;
                }
            };
            let msg = match msg {
                None => return "eof",
                Some(Err(error)) => {
                    debug!(%error, "websocket read failed");
                    return "io";
                }
                Some(Ok(m)) => m,
            };
            self.activity.touch();
            if let Message::Close(_) = msg {
                return "close";
            }
            match ws_frame::decode(self.p, &msg) {
                Ok(Incoming::Data(channel, data)) => {
                    if let Some(tx) = self.channels.get(&channel)
                        && !data.is_empty()
                        && tx.send(data).await.is_err()
                    {
                        // The channel's reader went away: drop what comes for it.
                        self.channels.remove(&channel);
                    }
                }
                Ok(Incoming::Close(channel)) => {
                    self.channels.remove(&channel);
                }
                Ok(Incoming::Nothing) => {}
                Err(error) => {
                    debug!(%error, "websocket protocol error");
                    return "protocol";
                }
            }
        }
    }
}

// === write loop ===

/// Writes messages in order; ends after a Close, when every sender is gone, or when the
/// socket fails.
async fn write_loop<S>(mut sink: S, mut rx: mpsc::Receiver<Out>, p: WsProtocol, activity: Activity)
where
    S: futures::Sink<Message, Error = tokio_tungstenite::tungstenite::Error> + Unpin,
{
    while let Some(out) = rx.recv().await {
        let (msg, last) = match out {
            Out::Data(channel, data) => (ws_frame::encode(p, channel, &data), false),
            Out::Close => {
                let frame = CloseFrame {
                    code: CloseCode::Normal,
                    reason: "".into(),
                };
                (Message::Close(Some(frame)), true)
            }
        };
        if let Err(error) = sink.send(msg).await {
            debug!(%error, "websocket write failed");
            return;
        }
        activity.touch();
        if last {
            return;
        }
    }
    let _ = sink.close().await;
}

#[cfg(test)]
mod tests;
