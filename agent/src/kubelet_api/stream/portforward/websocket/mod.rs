//! The legacy WebSocket port-forward (docs/reference/kubelet-api.md §5.7), the one kube-rs and
//! python-kubernetes speak: the ports come in the query (`port=p1[,p2…]`, repeatable); for the
//! i-th port channel `2i` carries data both ways and channel `2i+1` errors to the client, and
//! the first message on each is the port, two bytes little-endian. Each port gets one
//! connection from the Mac to the guest's IP, copied both ways until either side ends; a
//! failed connection is one line on the error channel, in kubelet's words. The WebSocket
//! closes when every port is done or the client goes away.
//!
//! kubectl 1.31+'s `SPDY/3.1+portforward.k8s.io` tunnel is a different protocol and is not
//! served (the subprotocols here are kubelet's v4 ones), so kubectl falls back to SPDY.

use std::{net::IpAddr, time::Duration};

use bytes::Bytes;
use tokio::{
    io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt},
    net::TcpStream,
    sync::mpsc,
    task::JoinSet,
    time::timeout,
};
use tracing::debug;

use crate::kubelet_api::stream::{
    remotecommand::session::DRAIN,
    websocket::{
        conn::{ChannelTx, WsConn},
        frame::WsProtocol,
    },
};
use spdy::conn::MAX_DATA;

/// Connecting to the guest's port must succeed within this.
const CONNECT_DEADLINE: Duration = Duration::from_secs(10);
/// Ports one request may forward: a channel number is one byte, two per port.
const MAX_PORTS: usize = 127;

/// PURE: the ports of a port-forward query, in order, as kubelet reads them, as many as
/// protocol `p` has channels for (two a port: 40 with base64, 127 otherwise).
///
/// # Errors
/// kubelet's 400 text: no `port`, an empty one, one that is not a port, or port 0; and ours
/// for more ports than `p` can carry.
pub(crate) fn ports(query: &str, p: WsProtocol) -> Result<Vec<u16>, String> {
    let mut out = Vec::new();
    let mut seen = false;
    for (k, v) in form_urlencoded::parse(query.as_bytes()) {
        if k != "port" {
            continue;
        }
        seen = true;
        if v.is_empty() {
            return Err("query parameter \"port\" cannot be empty".into());
        }
        for p in v.split(',') {
            match p.trim().parse::<u16>() {
                Ok(0) => return Err(format!("port {v:?} must be > 0")),
                Ok(port) => out.push(port),
                Err(e) => return Err(format!("unable to parse {v:?} as a port: {e}")),
            }
        }
    }
    if !seen {
        return Err("query parameter \"port\" is required".into());
    }
    let max = MAX_PORTS.min(usize::from(p.max_channel()).div_ceil(2));
    if out.len() > max {
        return Err(format!("at most {max} ports per request"));
    }
    Ok(out)
}

/// Serves one WebSocket port-forward over `io` to `ports` of `ip`; `what` names the Pod in
/// error lines (`<pod>, uid <uid>`); the connection closes after `idle` without traffic.
pub(crate) async fn serve<IO>(
    io: IO,
    p: WsProtocol,
    ports: Vec<u16>,
    ip: IpAddr,
    what: String,
    idle: Duration,
) where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let data_channels: Vec<u8> = (0..ports.len()).map(data_channel).collect();
    let (conn, mut inbound) = WsConn::start(io, p, &data_channels, idle).await;
    let mut pairs = JoinSet::new();
    for (i, port) in ports.into_iter().enumerate() {
        let data = conn.tx(data_channel(i));
        let error = conn.tx(data_channel(i) + 1);
        let head = port.to_le_bytes();
        if data.write(&head).await.is_err() || error.write(&head).await.is_err() {
            return;
        }
        let Some(rx) = inbound.remove(&data_channel(i)) else {
            return;
        };
        pairs.spawn(forward(ip, port, rx, data, error, what.clone()));
    }
    let closed = conn.closed();
    tokio::select! {
        () = async { while pairs.join_next().await.is_some() {} } => {
            conn.shutdown(DRAIN).await;
        }
        () = closed => debug!("port-forward client went away"),
    }
}

fn data_channel(i: usize) -> u8 {
    u8::try_from(i * 2).unwrap_or(u8::MAX)
}

/// One port: connect, then copy both ways until either side ends.
async fn forward(
    ip: IpAddr,
    port: u16,
    mut rx: mpsc::Receiver<Bytes>,
    data: ChannelTx,
    error: ChannelTx,
    what: String,
) {
    let stream = match timeout(CONNECT_DEADLINE, TcpStream::connect((ip, port))).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return fail(&error, port, &what, &e.to_string()).await,
        Err(_) => return fail(&error, port, &what, "connect timed out").await,
    };
    let (mut r, mut w) = stream.into_split();
    let to_guest = async {
        while let Some(b) = rx.recv().await {
            if w.write_all(&b).await.is_err() {
                break;
            }
        }
        let _ = w.shutdown().await;
    };
    let from_guest = async {
        let mut buf = vec![0u8; MAX_DATA];
        loop {
            match r.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if data.write(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            }
        }
    };
    // As kubelet's runtimes do: the first direction to end ends the port.
    tokio::select! {
        () = to_guest => {}
        () = from_guest => {}
    }
}

async fn fail(error: &ChannelTx, port: u16, what: &str, why: &str) {
    debug!(port, why, "port-forward connection failed");
    let line = format!("error forwarding port {port} to pod {what}: {why}");
    let _ = error.write(line.as_bytes()).await;
}

#[cfg(test)]
mod tests;
