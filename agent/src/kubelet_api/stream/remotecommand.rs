//! One exec session over an accepted SPDY connection (remotecommand, kubelet-api.md §5.3):
//! wait for the streams the request implies (30 s), start the command, copy stdin in and
//! stdout/stderr out, apply terminal sizes, and when the command exits: FIN the output
//! streams, write the status on the error stream, GOAWAY, and let the client hang up.
//!
//! When the client goes away first (socket closed, GOAWAY, idle timeout) the session is
//! dropped, which kills the command's process group: no `tart exec` outlives its client.

use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use tart::{ExecOpts, ExecReader, ExecSession, ExecWriter, WindowSize};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    sync::mpsc,
    task::JoinHandle,
    time::timeout,
};
use tracing::{debug, info, warn};

use super::{
    conn::{Conn, MAX_DATA, StreamTx},
    metrics::{SessionClock, SessionOutcome},
    protocol::{self, ExecOptions, Outcome, Protocol, ResizeDecoder, Role},
    zlib,
};

/// How long the client has to open every stream (kubelet's `streamCreationTimeout`).
pub const STREAM_CREATION: Duration = Duration::from_secs(30);
/// A connection with no frame either way for this long is closed (kubelet's
/// `streamingConnectionIdleTimeout`).
pub const IDLE: Duration = Duration::from_secs(4 * 60 * 60);
/// After the command exited: how long its output may still take to drain, and then how long
/// the client gets to hang up after GOAWAY.
pub const DRAIN: Duration = Duration::from_secs(5);
/// Starting `tart exec` is one fork and exec; bounded all the same.
const START_DEADLINE: Duration = Duration::from_secs(30);
/// The terminal size until the client's first resize arrives.
const DEFAULT_SIZE: WindowSize = WindowSize { cols: 80, rows: 24 };

/// Starts the command with the given options.
pub type Starter =
    Box<dyn FnOnce(ExecOpts) -> BoxFuture<'static, tart::Result<ExecSession>> + Send>;

/// The session's time limits.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    /// For the client to open its streams.
    pub creation: Duration,
    /// For output and hang-up after the command ended.
    pub drain: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            creation: STREAM_CREATION,
            drain: DRAIN,
        }
    }
}

/// How a session ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
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
    pub fn outcome(&self) -> SessionOutcome {
        match self {
            End::Exited(0) => SessionOutcome::Ok,
            End::Exited(_) => SessionOutcome::NonzeroExit,
            End::StartFailed => SessionOutcome::Error,
            End::ClientGone | End::StreamsTimedOut => SessionOutcome::ClientGone,
        }
    }
}

/// The streams of one session.
#[derive(Default)]
pub(super) struct Streams {
    pub(super) error: Option<StreamTx>,
    pub(super) stdin: Option<mpsc::Receiver<Bytes>>,
    pub(super) stdout: Option<StreamTx>,
    pub(super) stderr: Option<StreamTx>,
    pub(super) resize: Option<mpsc::Receiver<Bytes>>,
}

impl Streams {
    fn has(&self, r: Role) -> bool {
        match r {
            Role::Error => self.error.is_some(),
            Role::Stdin => self.stdin.is_some(),
            Role::Stdout => self.stdout.is_some(),
            Role::Stderr => self.stderr.is_some(),
            Role::Resize => self.resize.is_some(),
        }
    }
}

/// Serves one exec over `conn`, observing its setup and duration on `clock`.
pub async fn serve(
    mut conn: Conn,
    protocol: Protocol,
    options: ExecOptions,
    start: Starter,
    t: Timeouts,
    clock: SessionClock,
) -> End {
    let want = protocol::expected(&options, protocol);
    let mut streams = match timeout(t.creation, collect(&mut conn, &want)).await {
        Ok(Some(s)) => s,
        Ok(None) => return End::ClientGone,
        Err(_) => {
            warn!("timed out waiting for client to create streams");
            return End::StreamsTimedOut;
        }
    };
    let Some(error) = streams.error.take() else {
        return End::ClientGone;
    };
    let opts = ExecOpts {
        stdin: options.stdin,
        tty: options.tty.then_some(DEFAULT_SIZE),
    };
    let started = match timeout(START_DEADLINE, start(opts)).await {
        Ok(r) => r.map_err(|e| crate::telemetry::error_chain(&e)),
        Err(_) => Err("tart exec did not start in time".to_owned()),
    };
    let mut session = match started {
        Ok(s) => {
            clock.spawned();
            s
        }
        Err(e) => {
            warn!(error = %e, "exec could not start");
            for s in [&streams.stdout, &streams.stderr].into_iter().flatten() {
                let _ = s.finish().await;
            }
            report(&error, &Outcome::Failed(e), protocol).await;
            clock.status_written();
            conn.shutdown(t.drain).await;
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
    let closed = conn.closed();
    tokio::pin!(closed);
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
    for s in [&streams.stdout, &streams.stderr].into_iter().flatten() {
        let _ = s.finish().await;
    }
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
    report(&error, &outcome, protocol).await;
    clock.status_written();
    conn.shutdown(t.drain).await;
    end
}

/// Waits for the streams in `want`; `None` when the client goes away first.
pub(super) async fn collect(conn: &mut Conn, want: &[Role]) -> Option<Streams> {
    let mut s = Streams::default();
    while !want.iter().all(|r| s.has(*r)) {
        let new = conn.accept().await?;
        let kind = zlib::get(&new.headers, "streamtype").unwrap_or_default();
        let Some(role) = Role::parse(kind).filter(|r| want.contains(r) && !s.has(*r)) else {
            debug!(streamtype = kind, "unexpected stream ignored");
            continue;
        };
        let tx = conn.tx(new.id);
        match role {
            Role::Error => s.error = Some(tx),
            Role::Stdin => s.stdin = Some(new.data),
            Role::Stdout => s.stdout = Some(tx),
            Role::Stderr => s.stderr = Some(tx),
            Role::Resize => s.resize = Some(new.data),
        }
    }
    Some(s)
}

pub(super) async fn report(error: &StreamTx, outcome: &Outcome, p: Protocol) {
    let text = protocol::status(outcome, p);
    if !text.is_empty() {
        let _ = error.write(text.as_bytes()).await;
    }
    let _ = error.finish().await;
}

/// Copies the command's output to a stream, then half-closes it.
async fn copy_out(mut r: ExecReader, tx: StreamTx) {
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
    let _ = tx.finish().await;
}

/// Copies the client's stdin to the command; the client's FIN closes the command's stdin.
async fn copy_in(mut rx: mpsc::Receiver<Bytes>, mut w: ExecWriter) {
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

#[cfg(test)]
#[path = "remotecommand_tests.rs"]
mod tests;
