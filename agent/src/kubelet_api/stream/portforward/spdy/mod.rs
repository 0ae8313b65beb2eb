//! `kubectl port-forward` over SPDY (`portforward.k8s.io`, docs/reference/kubelet-api.md §5.5): for
//! each local connection the client opens a pair of streams — `error` then `data` — with the same
//! `port` and `requestid`; once both are there the agent connects to the guest's IP on that port
//! (from the Mac, as the Pod's IP is reachable from it) and copies bytes both ways, passing
//! half-closes on. A failed connection is one line on the error stream, in kubelet's words, and a
//! reset of the data stream. A pair left incomplete for 30 s is dropped the same way. Everything
//! ends when the connection closes.

use std::{
    collections::HashMap,
    net::{IpAddr, SocketAddr},
    time::Duration,
};

use bytes::Bytes;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
    sync::mpsc,
    task::JoinSet,
    time::{Instant, timeout},
};
use tracing::debug;

use crate::kubelet_api::stream::remotecommand::session::STREAM_CREATION;
use spdy::{
    conn::{Conn, MAX_DATA, NewStream, StreamTx},
    frame::RstStatus,
    zlib,
};

/// The one protocol version of port-forward.
pub(crate) const PROTOCOL: &str = "portforward.k8s.io";
/// Connecting to the guest's port must succeed within this.
const CONNECT_DEADLINE: Duration = Duration::from_secs(10);

/// PURE: what a stream's headers say, or why it is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StreamHead {
    /// `error` (true) or `data` (false).
    pub error: bool,
    /// The guest port.
    pub port: u16,
    /// The pair it belongs to.
    pub request: String,
}

/// PURE: reads `streamtype`, `port` and `requestid`; without `requestid` (old clients) the
/// pair is named after the error stream's id, which the data stream's id follows by 2.
///
/// # Errors
/// The reason, for a missing or bad `port` or `streamtype`.
pub(crate) fn head(headers: &zlib::Headers, id: u32) -> Result<StreamHead, String> {
    let port = zlib::get(headers, "port").ok_or("port header is missing")?;
    let port = match port.parse::<u16>() {
        Ok(p) if p > 0 => p,
        _ => return Err(format!("invalid port {port:?}")),
    };
    let error = match zlib::get(headers, "streamtype") {
        Some("error") => true,
        Some("data") => false,
        other => return Err(format!("invalid stream type {other:?}")),
    };
    let request = zlib::get(headers, "requestid").map_or_else(
        || {
            let base = if error { id } else { id.saturating_sub(2) };
            base.to_string()
        },
        str::to_owned,
    );
    Ok(StreamHead {
        error,
        port,
        request,
    })
}

/// One half-built pair.
struct Pair {
    port: u16,
    error: Option<StreamTx>,
    data: Option<(StreamTx, mpsc::Receiver<Bytes>)>,
    since: Instant,
}

/// Serves port-forward pairs over `conn` to `ip` until the client goes away; `what` names the
/// Pod in error messages (`<pod>, uid <uid>`).
pub(crate) async fn serve(mut conn: Conn, ip: IpAddr, what: String) {
    let mut pairs: HashMap<String, Pair> = HashMap::new();
    let mut forwards = JoinSet::new();
    let mut sweep = tokio::time::interval(Duration::from_secs(1));
    loop {
        let new = tokio::select! {
            s = conn.accept() => match s {
                Some(s) => s,
                None => break,
            },
            _ = sweep.tick() => {
                expire(&mut pairs, &what).await;
                continue;
            }
            Some(_) = forwards.join_next(), if !forwards.is_empty() => continue,
        };
        let NewStream { id, headers, data } = new;
        debug!(stream = id, ?headers, "port-forward stream");
        let tx = conn.tx(id);
        let h = match head(&headers, id) {
            Ok(h) => h,
            Err(why) => {
                debug!(stream = id, %why, "port-forward stream refused");
                tx.reset(RstStatus::ProtocolError).await;
                continue;
            }
        };
        let pair = pairs.entry(h.request.clone()).or_insert_with(|| Pair {
            port: h.port,
            error: None,
            data: None,
            since: Instant::now(),
        });
        let taken = if h.error {
            pair.error.is_some()
        } else {
            pair.data.is_some()
        };
        if taken || pair.port != h.port {
            let kind = if h.error { "error" } else { "data" };
            if let Some(e) = &pair.error {
                let _ = e
                    .write(format!("{kind} stream already assigned").as_bytes())
                    .await;
            }
            tx.reset(RstStatus::ProtocolError).await;
            continue;
        }
        if h.error {
            pair.error = Some(tx);
        } else {
            pair.data = Some((tx, data));
        }
        if pair.error.is_some() && pair.data.is_some() {
            let Some(Pair {
                port,
                error: Some(error),
                data: Some((data_tx, data_rx)),
                ..
            }) = pairs.remove(&h.request)
            else {
                continue;
            };
            let what = what.clone();
            forwards.spawn(forward(ip, port, error, data_tx, data_rx, what));
        }
    }
    // The client is gone: every forward ends with the connection.
    forwards.abort_all();
}

/// Drops pairs that did not complete within the stream creation timeout.
async fn expire(pairs: &mut HashMap<String, Pair>, what: &str) {
    let now = Instant::now();
    let old: Vec<String> = pairs
        .iter()
        .filter(|(_, p)| now.duration_since(p.since) >= STREAM_CREATION)
        .map(|(k, _)| k.clone())
        .collect();
    for k in old {
        let Some(p) = pairs.remove(&k) else { continue };
        debug!(request = %k, "port-forward pair timed out");
        if let Some(e) = &p.error {
            let msg = format!(
                "error forwarding port {} to pod {what}: timed out waiting for streams",
                p.port
            );
            let _ = e.write(msg.as_bytes()).await;
            let _ = e.finish().await;
        }
        if let Some((d, _)) = &p.data {
            d.reset(RstStatus::Cancel).await;
        }
    }
}

/// One forwarded connection: guest port ⇄ data stream.
async fn forward(
    ip: IpAddr,
    port: u16,
    error: StreamTx,
    data: StreamTx,
    mut rx: mpsc::Receiver<Bytes>,
    what: String,
) {
    let addr = SocketAddr::new(ip, port);
    let tcp = match timeout(CONNECT_DEADLINE, TcpStream::connect(addr)).await {
        Ok(Ok(t)) => t,
        Ok(Err(e)) => return fail(&error, &data, port, &what, &e.to_string()).await,
        Err(_) => return fail(&error, &data, port, &what, "connection timed out").await,
    };
    debug!(%addr, "port-forward connected");
    let (mut rd, mut wr) = tcp.into_split();
    let inbound = async {
        while let Some(b) = rx.recv().await {
            if wr.write_all(&b).await.is_err() {
                return;
            }
        }
        // The client's FIN: no more bytes toward the guest.
        let _ = wr.shutdown().await;
    };
    let outbound = async {
        let mut buf = vec![0u8; MAX_DATA];
        loop {
            match rd.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if data.write(&buf[..n]).await.is_err() {
                        return;
                    }
                }
            }
        }
        let _ = data.finish().await;
    };
    tokio::join!(inbound, outbound);
    let _ = error.finish().await;
}

async fn fail(error: &StreamTx, data: &StreamTx, port: u16, what: &str, why: &str) {
    let msg = format!("error forwarding port {port} to pod {what}: {why}");
    debug!(%msg, "port-forward failed");
    let _ = error.write(msg.as_bytes()).await;
    let _ = error.finish().await;
    data.reset(RstStatus::Cancel).await;
}

#[cfg(test)]
mod tests;
