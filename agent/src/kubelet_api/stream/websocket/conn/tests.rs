//! The WebSocket connection alone: channels split out of client messages, the idle timeout,
//! and a protocol error ending the connection.

use futures::{SinkExt, StreamExt};
use tokio::time::timeout;
use tokio_tungstenite::tungstenite::protocol::Role;

use super::*;
use crate::kubelet_api::stream::fixtures::T;

async fn pair(
    p: WsProtocol,
    idle: Duration,
) -> (WebSocketStream<tokio::io::DuplexStream>, WsConn, Inbound) {
    let (a, b) = tokio::io::duplex(1 << 16);
    let (conn, inbound) = WsConn::start(b, p, &[0, 4], idle).await;
    let client = WebSocketStream::from_raw_socket(a, Role::Client, None).await;
    (client, conn, inbound)
}

#[tokio::test]
async fn stdin_and_resize_are_split_out_and_other_channels_dropped() {
    let (mut c, _conn, mut inbound) = pair(WsProtocol::V5, Duration::from_secs(60)).await;
    for m in [&b"\x07ignored"[..], b"\x00in", b"\x04{}", b"\x00put"] {
        c.send(Message::Binary(Bytes::copy_from_slice(m)))
            .await
            .unwrap();
    }
    let stdin = inbound.get_mut(&0).unwrap();
    assert_eq!(timeout(T, stdin.recv()).await.unwrap().unwrap(), "in");
    assert_eq!(timeout(T, stdin.recv()).await.unwrap().unwrap(), "put");
    let resize = inbound.get_mut(&4).unwrap();
    assert_eq!(timeout(T, resize.recv()).await.unwrap().unwrap(), "{}");
}

#[tokio::test(start_paused = true)]
async fn a_silent_connection_is_closed_after_the_idle_timeout() {
    let (_c, conn, _inbound) = pair(WsProtocol::V4, Duration::from_secs(60)).await;
    let closed = conn.closed();
    assert!(
        timeout(Duration::from_secs(59), conn.closed())
            .await
            .is_err(),
        "not before the timeout"
    );
    timeout(Duration::from_secs(2), closed)
        .await
        .expect("closed once idle");
}

#[tokio::test]
async fn a_malformed_close_signal_ends_the_connection() {
    let (mut c, conn, mut inbound) = pair(WsProtocol::V5, Duration::from_secs(60)).await;
    c.send(Message::Binary(Bytes::from_static(&[0xFF, 0, 0])))
        .await
        .unwrap();
    timeout(T, conn.closed()).await.expect("closed");
    let stdin = inbound.get_mut(&0).unwrap();
    assert_eq!(timeout(T, stdin.recv()).await.unwrap(), None);
}

#[tokio::test]
async fn shutdown_sends_close_and_waits_for_the_reply() {
    let (mut c, conn, _inbound) = pair(WsProtocol::V5, Duration::from_secs(60)).await;
    conn.tx(ws_frame::STDOUT).write(b"bye").await.unwrap();
    let server = tokio::spawn(conn.shutdown(T));
    let mut got = Vec::new();
    while let Some(Ok(m)) = timeout(T, c.next()).await.unwrap() {
        got.push(m);
    }
    assert_eq!(got[0], Message::Binary(Bytes::from_static(b"\x01bye")));
    assert!(
        matches!(got.last(), Some(Message::Close(Some(_)))),
        "{got:?}"
    );
    timeout(T, server).await.unwrap().unwrap();
}
