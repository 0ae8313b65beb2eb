//! The transport-neutral core of an exec session (remotecommand,
//! docs/reference/kubelet-api.md §5.3, §5.6): once the client's streams are open — SPDY streams or
//! WebSocket channels, opened by the transport module — start the command, copy stdin in and
//! stdout/stderr out, apply terminal sizes, and when the command exits: end the output, write the
//! status on the error stream, and end the connection as its transport does.
//!
//! When the client goes away first (socket closed, GOAWAY or Close, idle timeout) the session
//! is dropped, which kills the command's process group: no `tart exec` outlives its client.

use std::time::Duration;

use bytes::Bytes;
use futures::{FutureExt, future::BoxFuture};
use tart::{ExecOpts, ExecReader, ExecSession, ExecWriter, WindowSize};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    sync::mpsc,
    task::JoinHandle,
    time::timeout,
};
use tracing::{debug, info, warn};

use super::protocol::{self, ExecOptions, Outcome, Protocol, ResizeDecoder};
use crate::kubelet_api::stream::{
    metrics::{SessionClock, SessionOutcome},
    websocket::conn::{ChannelTx, WsConn},
};
use spdy::conn::{Closed, Conn, MAX_DATA, StreamTx};

/// How long the client has to open every stream (kubelet's `streamCreationTimeout`).
pub(crate) const STREAM_CREATION: Duration = Duration::from_secs(30);
/// A connection with no frame either way for this long is closed (kubelet's
/// `streamingConnectionIdleTimeout`); `--streaming-connection-idle-timeout` sets it, with this
/// as its default.
pub(crate) use crate::config::STREAMING_IDLE as IDLE;
/// After the command exited: how long its output may still take to drain, and then how long
/// the client gets to hang up after GOAWAY or Close.
pub(crate) const DRAIN: Duration = Duration::from_secs(5);
/// Starting `tart exec` is one fork and exec; bounded all the same.
const START_DEADLINE: Duration = Duration::from_secs(30);
/// The terminal size until the client's first resize arrives.
const DEFAULT_SIZE: WindowSize = WindowSize { cols: 80, rows: 24 };

/// Starts the command with the given options.
pub(crate) type Starter =
    Box<dyn FnOnce(ExecOpts) -> BoxFuture<'static, tart::Result<ExecSession>> + Send>;

/// The session's time limits.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timeouts {
    /// For the client to open its streams.
    pub creation: Duration,
    /// For output and hang-up after the command ended.
    pub drain: Duration,
    /// Nothing moved either way on the connection for this long: it is closed.
    pub idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            creation: STREAM_CREATION,
            drain: DRAIN,
            idle: IDLE,
        }
    }
}

/// How a session ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum End {
    /// The command exited with this code, reported to the client.
    Exited(i32),
    /// The command could not be started; the client was told why.
    StartFailed,
    /// The client went away; the command was killed.
    ClientGone,
    /// The client did not open its streams in time.
    StreamsTimedOut,
}

impl End {
    /// PURE: the metric outcome of a session that ended so.
    pub(crate) fn outcome(&self) -> SessionOutcome {
        match self {
            End::Exited(0) => SessionOutcome::Ok,
            End::Exited(_) => SessionOutcome::NonzeroExit,
            End::StartFailed => SessionOutcome::Error,
            End::ClientGone | End::StreamsTimedOut => SessionOutcome::ClientGone,
        }
    }
}

/// One server → client stream, whatever the transport.
#[derive(Debug, Clone)]
pub(crate) enum Sink {
    /// A SPDY stream.
    Spdy(StreamTx),
    /// A WebSocket channel.
    Ws(ChannelTx),
}

impl Sink {
    /// Sends `bytes`.
    ///
    /// # Errors
    /// [`Closed`] when the connection is gone.
    pub(crate) async fn write(&self, bytes: &[u8]) -> Result<(), Closed> {
        match self {
            Self::Spdy(s) => s.write(bytes).await,
            Self::Ws(c) => c.write(bytes).await,
        }
    }

    /// Ends the stream: a SPDY FIN. A WebSocket channel has no end of its own; the Close
    /// frame after the status ends them all.
    pub(crate) async fn finish(&self) {
        if let Self::Spdy(s) = self {
            let _ = s.finish().await;
        }
    }
}

/// The connection under a session.
pub(crate) enum Link {
    /// SPDY/3.1.
    Spdy(Conn),
    /// WebSocket.
    Ws(WsConn),
}

impl Link {
    /// Resolves when the client is gone.
    pub(crate) fn closed(&self) -> BoxFuture<'static, ()> {
        match self {
            Self::Spdy(c) => c.closed().boxed(),
            Self::Ws(c) => c.closed().boxed(),
        }
    }

    /// Ends the connection after the status (GOAWAY or Close), giving the client `drain` to
    /// hang up.
    pub(crate) async fn shutdown(self, drain: Duration) {
        match self {
            Self::Spdy(c) => c.shutdown(drain).await,
            Self::Ws(c) => c.shutdown(drain).await,
        }
    }
}

/// The streams of one session.
#[derive(Default)]
pub(crate) struct Streams {
    /// Server → client: the status.
    pub error: Option<Sink>,
    /// Client → server.
    pub stdin: Option<mpsc::Receiver<Bytes>>,
    /// Server → client.
    pub stdout: Option<Sink>,
    /// Server → client.
    pub stderr: Option<Sink>,
    /// Client → server: terminal sizes.
    pub resize: Option<mpsc::Receiver<Bytes>>,
}

/// A session whose streams are all open.
pub(crate) struct Opened {
    pub streams: Streams,
    /// The connection.
    pub link: Link,
    /// The remotecommand version whose status text the client reads.
    pub status: Protocol,
}

impl Opened {
    /// Its parts, the error stream taken out of the streams; `None` when the client opened no
    /// error stream, so nothing can report the session's end (it is gone).
    pub(crate) fn with_error_stream(self) -> Option<(Streams, Link, Protocol, Sink)> {
        let Self {
            mut streams,
            link,
            status,
        } = self;
        let error = streams.error.take()?;
        Some((streams, link, status, error))
    }
}

/// Runs one exec over `opened`, observing its setup and duration on `clock`.
pub(crate) async fn exec(
    opened: Opened,
    options: ExecOptions,
    start: Starter,
    t: Timeouts,
    clock: SessionClock,
) -> End {
    let Some((mut streams, link, status, error)) = opened.with_error_stream() else {
        return End::ClientGone;
    };
    let opts = ExecOpts {
        stdin: options.stdin,
        tty: options.tty.then_some(DEFAULT_SIZE),
    };
    let started = match timeout(START_DEADLINE, start(opts)).await {
        Ok(r) => r.map_err(|e| crate::errors::error_chain(&e)),
        Err(_) => Err("tart exec did not start in time".to_owned()),
    };
    let mut session = match started {
        Ok(s) => {
            clock.spawned();
            s
        }
        Err(e) => {
            warn!(error = %e, "exec could not start");
            finish_outputs(&streams).await;
            report(&error, &Outcome::Failed(e), status).await;
            clock.status_written();
            link.shutdown(t.drain).await;
            return End::StartFailed;
        }
    };
    let mut outputs = Vec::new();
    for (reader, tx) in [
        (session.stdout.take(), streams.stdout.clone()),
        (session.stderr.take(), streams.stderr.clone()),
    ] {
        if let (Some(r), Some(tx)) = (reader, tx) {
            outputs.push(tokio::spawn(copy_out(r, tx)));
        }
    }
    let stdin = match (session.stdin.take(), streams.stdin.take()) {
        (Some(w), Some(rx)) => Some(Aborting(tokio::spawn(copy_in(rx, w)))),
        _ => None,
    };
    let (size_tx, mut sizes) = mpsc::channel(4);
    let _resize = streams
        .resize
        .take()
        .map(|rx| Aborting(tokio::spawn(decode_sizes(rx, size_tx))));
    let Some(mut wait) = session.take_wait() else {
        return End::ClientGone;
    };
    let mut closed = link.closed();
    let exited = loop {
        tokio::select! {
            r = &mut wait => break r,
            Some(size) = sizes.recv() => session.resize(size),
            () = &mut closed => {
                info!("exec client went away; killing the command");
                drop(session);
                for o in outputs {
                    o.abort();
                }
                return End::ClientGone;
            }
        }
    };
    // Stragglers in the command's group would hold its pipes open: end them, then drain.
    drop(session);
    drop(stdin);
    for o in outputs {
        let abort = o.abort_handle();
        if timeout(t.drain, o).await.is_err() {
            abort.abort();
        }
    }
    finish_outputs(&streams).await;
    let (outcome, end) = match exited {
        Ok(code) => (
            Outcome::Exited {
                code,
                command: options.command.clone(),
            },
            End::Exited(code),
        ),
        Err(e) => (Outcome::Failed(e.to_string()), End::StartFailed),
    };
    debug!(?end, "exec finished");
    report(&error, &outcome, status).await;
    clock.status_written();
    link.shutdown(t.drain).await;
    end
}

/// Ends stdout and stderr.
pub(super) async fn finish_outputs(streams: &Streams) {
    for s in [&streams.stdout, &streams.stderr].into_iter().flatten() {
        s.finish().await;
    }
}

/// Writes the status of `outcome` on the error stream and ends it.
pub(super) async fn report(error: &Sink, outcome: &Outcome, p: Protocol) {
    let text = protocol::status(outcome, p);
    if !text.is_empty() {
        let _ = error.write(text.as_bytes()).await;
    }
    error.finish().await;
}

/// Copies the command's output to a stream, then ends it.
async fn copy_out(mut r: ExecReader, tx: Sink) {
    let mut buf = vec![0u8; MAX_DATA];
    loop {
        match r.read(&mut buf).await {
            // A terminal's end is EIO once the command is gone.
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if tx.write(&buf[..n]).await.is_err() {
                    return;
                }
            }
        }
    }
    tx.finish().await;
}

/// Copies the client's stdin to the command; the end of the client's stdin closes the
/// command's.
pub(super) async fn copy_in(mut rx: mpsc::Receiver<Bytes>, mut w: ExecWriter) {
    while let Some(b) = rx.recv().await {
        if w.write_all(&b).await.is_err() || w.flush().await.is_err() {
            return;
        }
    }
    let _ = w.shutdown().await;
}

/// Turns the resize stream into terminal sizes.
async fn decode_sizes(mut rx: mpsc::Receiver<Bytes>, tx: mpsc::Sender<WindowSize>) {
    let mut d = ResizeDecoder::default();
    while let Some(b) = rx.recv().await {
        match d.push(&b) {
            Ok(sizes) => {
                for s in sizes {
                    let size = WindowSize {
                        cols: s.width,
                        rows: s.height,
                    };
                    if tx.send(size).await.is_err() {
                        return;
                    }
                }
            }
            Err(error) => {
                debug!(%error, "resize stream abandoned");
                return;
            }
        }
    }
}

/// A helper task that ends with the session.
pub(super) struct Aborting(pub(super) JoinHandle<()>);

impl Drop for Aborting {
    fn drop(&mut self) {
        self.0.abort();
    }
}
