//! One attach session (remotecommand, docs/reference/kubelet-api.md §5.3, §5.6), over SPDY or
//! WebSocket: the guest launcher's job output, from the moment of attaching, to the client, and the
//! client's stdin into the job when its container sets `stdin: true`.
//!
//! The launcher mirrors the job's stdout and stderr into the status share, and the Pod log
//! collector records them; attach follows that record from its current end, so the client
//! sees what the job prints from now on, until the run ends (then the status is `Success`)
//! or the client goes away. The record does not keep stdout and stderr apart on the way
//! out, so both arrive on the client's stdout (its stderr when it asked only for that).
//!
//! Stdin goes through the launcher's relay ([`RELAY`], docs/guest.md "Stdin"): `tart exec -i`
//! runs it in the guest, and it copies what it reads into the FIFO the job reads. The relay
//! is killed when the session ends, which is how `stdinOnce` closes the job's stdin after the
//! first attach. A container without `stdin: true` gets no stdin: [`refusal`] answers an
//! `input=1` request before the upgrade.

use bytes::Bytes;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use tart::{ExecOpts, ExecReader, ExecSession};
use tokio::{io::AsyncReadExt, sync::mpsc, time::timeout};
use tracing::{debug, info, warn};

use super::{
    protocol::{ExecOptions, Outcome},
    session::{Aborting, Opened, Sink, Starter, Timeouts, copy_in, finish_outputs, report},
};
use crate::kubelet_api::logs::LogStream;

/// The guest command that feeds the job's stdin: the launcher at its installed path, with
/// the sub-command that copies its own stdin into the job's (docs/guest.md).
pub(crate) const RELAY: [&str; 2] = [
    "/usr/local/libexec/tart-guest/tart-guest-launcher",
    "--stdin-relay",
];
/// Starting the relay is one `tart exec`; bounded all the same.
const RELAY_START: std::time::Duration = std::time::Duration::from_secs(30);

/// How an attach session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AttachEnd {
    /// The job's run ended; the client was told `Success`.
    OutputEnded,
    /// Reading the job's output failed; the client was told why.
    ReadFailed,
    /// The client went away.
    ClientGone,
    /// The client did not open its streams in time.
    StreamsTimedOut,
}

/// PURE: why an attach to `container` of `pod` with `options` is refused before the upgrade
/// (a 400 with this message), or `None` to serve it.
///
/// stdin with a terminal (`tty=1`, which kubectl sends for `attach -it` to a `tty: true`
/// container) is refused: the job has no terminal, so the raw keys of the client's terminal
/// would reach it unedited — Enter as a carriage return, nothing echoed, Ctrl-C and Ctrl-D as
/// plain bytes — a session nobody can use or leave. Output alone needs no terminal.
pub(crate) fn refusal(pod: &Pod, container: &str, options: &ExecOptions) -> Option<String> {
    if !options.stdin {
        return None;
    }
    if !has_stdin(pod, container) {
        return Some(format!(
            "stdin is not enabled for container {container:?} (the Pod does not set \
             `stdin: true`); attach without -i to follow its output"
        ));
    }
    options.tty.then(|| {
        format!(
            "cannot attach to container {container:?} with a terminal: tart-kubelet gives the \
             job in the VM no terminal (`tty: true` is not honoured), so typed keys would not \
             reach it as lines; attach with stdin from a pipe (`printf 'text\\n' | kubectl \
             attach -i ...`), without -i to follow the output, or use `kubectl exec -it ... -- \
             sh` for an interactive shell"
        )
    })
}

/// PURE: whether `container` of `pod` sets `stdin: true`.
pub(crate) fn has_stdin(pod: &Pod, container: &str) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.containers.iter().find(|c| c.name == container))
        .and_then(|c| c.stdin)
        .unwrap_or(false)
}

/// Serves one attach over the SPDY `conn`, copying `output` to the client (no stdin).
#[cfg(test)]
pub(crate) async fn serve(
    conn: spdy::conn::Conn,
    protocol: super::protocol::Protocol,
    options: ExecOptions,
    output: LogStream,
    t: Timeouts,
) -> AttachEnd {
    match super::spdy::open(conn, protocol, &options, t).await {
        Ok(opened) => run(opened, output, None, t).await,
        Err(super::session::End::StreamsTimedOut) => AttachEnd::StreamsTimedOut,
        Err(_) => AttachEnd::ClientGone,
    }
}

/// Serves one attach over `opened`: `output` to the client, and the client's stdin to the
/// job through `relay` when there is one.
pub(crate) async fn run(
    opened: Opened,
    mut output: LogStream,
    relay: Option<Starter>,
    t: Timeouts,
) -> AttachEnd {
    let Some((mut streams, link, status, error)) = opened.with_error_stream() else {
        return AttachEnd::ClientGone;
    };
    // Terminal sizes have nowhere to go (the job has no terminal): read and drop them.
    let _resize = streams
        .resize
        .take()
        .map(|rx| Aborting(tokio::spawn(drain(rx))));
    let _stdin = match (streams.stdin.take(), relay) {
        (Some(rx), Some(start)) => feed(rx, start, streams.stderr.clone()).await,
        (Some(rx), None) => Some(Relay::new(None, tokio::spawn(drain(rx)))),
        (None, _) => None,
    };
    let out = streams.stdout.clone().or_else(|| streams.stderr.clone());
    let mut closed = link.closed();
    let end = loop {
        tokio::select! {
            chunk = output.next() => match chunk {
                None => break AttachEnd::OutputEnded,
                Some(Ok(bytes)) => {
                    if let Some(tx) = &out
                        && tx.write(&bytes).await.is_err()
                    {
                        return AttachEnd::ClientGone;
                    }
                }
                Some(Err(e)) => {
                    warn!(error = %e, "reading the job's output failed");
                    break AttachEnd::ReadFailed;
                }
            },
            () = &mut closed => {
                info!("attach client went away");
                return AttachEnd::ClientGone;
            }
        }
    };
    finish_outputs(&streams).await;
    let outcome = match end {
        AttachEnd::ReadFailed => Outcome::Failed("reading the container's output failed".into()),
        _ => Outcome::Exited {
            code: 0,
            command: Vec::new(),
        },
    };
    debug!(?end, "attach finished");
    report(&error, &outcome, status).await;
    link.shutdown(t.drain).await;
    end
}

/// The stdin relay of a session: the guest command (dropping it kills it) and the copy.
struct Relay {
    _guest: Option<ExecSession>,
    _copy: Aborting,
}

impl Relay {
    fn new(guest: Option<ExecSession>, copy: tokio::task::JoinHandle<()>) -> Self {
        Self {
            _guest: guest,
            _copy: Aborting(copy),
        }
    }
}

/// Starts the relay and copies the client's stdin into it; what the relay says on stderr
/// (why it gave up) goes to the client's stderr.
async fn feed(rx: mpsc::Receiver<Bytes>, start: Starter, stderr: Option<Sink>) -> Option<Relay> {
    let opts = ExecOpts {
        stdin: true,
        tty: None,
    };
    let mut session = match timeout(RELAY_START, start(opts)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            warn!(error = %crate::errors::error_chain(&e), "stdin relay could not start");
            return Some(Relay::new(None, tokio::spawn(drain(rx))));
        }
        Err(_) => {
            warn!("stdin relay did not start in time");
            return Some(Relay::new(None, tokio::spawn(drain(rx))));
        }
    };
    let Some(w) = session.stdin.take() else {
        return Some(Relay::new(Some(session), tokio::spawn(drain(rx))));
    };
    if let Some(r) = session.stderr.take() {
        tokio::spawn(relay_says(r, stderr));
    }
    Some(Relay::new(Some(session), tokio::spawn(copy_in(rx, w))))
}

/// Copies the relay's stderr to the client's stderr, without ending it.
async fn relay_says(mut r: ExecReader, to: Option<Sink>) {
    let mut buf = vec![0u8; 4096];
    while let Ok(n @ 1..) = r.read(&mut buf).await {
        debug!(said = %String::from_utf8_lossy(&buf[..n]).trim_end(), "stdin relay");
        if let Some(s) = &to
            && s.write(&buf[..n]).await.is_err()
        {
            return;
        }
    }
}

async fn drain(mut rx: mpsc::Receiver<Bytes>) {
    while rx.recv().await.is_some() {}
}

#[cfg(test)]
mod tests;
