//! One attach session over an accepted SPDY connection (remotecommand, kubelet-api.md §5.3):
//! the guest launcher's job output, from the moment of attaching, to the client.
//!
//! The launcher mirrors the job's stdout and stderr into the status share, and the Pod log
//! collector records them; attach follows that record from its current end, so the client
//! sees what the job prints from now on, until the run ends (then the status is `Success`)
//! or the client goes away. The record does not keep stdout and stderr apart on the way
//! out, so both arrive on the client's stdout (its stderr when it asked only for that).
//!
//! Stdin is never attached: the launcher runs the job with stdin from `/dev/null`, so
//! [`refusal`] answers an `input=1` request before the upgrade, in words that say why.

use bytes::Bytes;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use tokio::{sync::mpsc, time::timeout};
use tracing::{debug, info, warn};

use super::{
    conn::Conn,
    protocol::{self, ExecOptions, Outcome, Protocol},
    remotecommand::{Aborting, Timeouts, collect, report},
};
use crate::kubelet_api::logs::LogStream;

/// How an attach session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttachEnd {
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
pub fn refusal(pod: &Pod, container: &str, options: &ExecOptions) -> Option<String> {
    if !options.stdin {
        return None;
    }
    let wants_stdin = pod
        .spec
        .as_ref()
        .and_then(|s| s.containers.iter().find(|c| c.name == container))
        .and_then(|c| c.stdin)
        .unwrap_or(false);
    Some(if wants_stdin {
        format!(
            "attaching stdin is not supported by this node (tart-kubelet): the guest launcher \
             runs container {container:?}'s job with stdin from /dev/null; attach without -i \
             to follow its output"
        )
    } else {
        format!(
            "stdin is not enabled for container {container:?} (the Pod does not set \
             `stdin: true`); attach without -i to follow its output"
        )
    })
}

/// Serves one attach over `conn`, copying `output` to the client.
pub async fn serve(
    mut conn: Conn,
    protocol: Protocol,
    options: ExecOptions,
    mut output: LogStream,
    t: Timeouts,
) -> AttachEnd {
    let want = protocol::expected(&options, protocol);
    let mut streams = match timeout(t.creation, collect(&mut conn, &want)).await {
        Ok(Some(s)) => s,
        Ok(None) => return AttachEnd::ClientGone,
        Err(_) => {
            warn!("timed out waiting for client to create streams");
            return AttachEnd::StreamsTimedOut;
        }
    };
    let Some(error) = streams.error.take() else {
        return AttachEnd::ClientGone;
    };
    // Terminal sizes have nowhere to go (the job has no terminal): read and drop them.
    let _resize = streams
        .resize
        .take()
        .map(|rx| Aborting(tokio::spawn(drain(rx))));
    let out = streams.stdout.clone().or_else(|| streams.stderr.clone());
    let closed = conn.closed();
    tokio::pin!(closed);
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
    for s in [&streams.stdout, &streams.stderr].into_iter().flatten() {
        let _ = s.finish().await;
    }
    let outcome = match end {
        AttachEnd::ReadFailed => Outcome::Failed("reading the container's output failed".into()),
        _ => Outcome::Exited {
            code: 0,
            command: Vec::new(),
        },
    };
    debug!(?end, "attach finished");
    report(&error, &outcome, protocol).await;
    conn.shutdown(t.drain).await;
    end
}

async fn drain(mut rx: mpsc::Receiver<Bytes>) {
    while rx.recv().await.is_some() {}
}

#[cfg(test)]
#[path = "attach_tests.rs"]
mod tests;
