//! Choosing the transport from the request headers, and exec sessions over a WebSocket driven
//! by a scripted client (tungstenite's client role) and a scripted command.

use std::sync::{Arc, atomic::Ordering};

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use hyper::header::{HeaderMap, HeaderValue};
use tokio::{io::DuplexStream, time::timeout};
use tokio_tungstenite::{
    WebSocketStream,
    tungstenite::{Message, protocol::Role},
};

use super::*;
use crate::kubelet_api::stream::{
    fixtures::{Seen, T, scripted},
    metrics::SessionClock,
    remotecommand::{
        protocol,
        session::{self, End},
    },
};

fn headers(list: &[(&'static str, &'static str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (n, v) in list {
        h.append(*n, HeaderValue::from_static(v));
    }
    h
}

const WS: [(&str, &str); 4] = [
    ("connection", "Upgrade"),
    ("upgrade", "websocket"),
    ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="),
    ("sec-websocket-version", "13"),
];

#[test]
fn kubectls_websocket_request_gets_v5_and_the_accept_key() {
    let mut h = headers(&WS);
    h.append(
        "sec-websocket-protocol",
        HeaderValue::from_static("v4.channel.k8s.io,v5.channel.k8s.io"),
    );
    let t = decide(&h).unwrap();
    assert_eq!(
        t,
        Transport::WebSocket {
            protocol: WsProtocol::V5,
            accept: "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=".into(),
        }
    );
    let sent: Vec<_> = t.switching_headers();
    assert!(sent.contains(&("sec-websocket-protocol", "v5.channel.k8s.io".into())));
    assert!(sent.contains(&("upgrade", "websocket".into())));
}

#[test]
fn websockets_asking_for_nothing_served_are_refused_before_upgrading() {
    let mut tunnel = headers(&WS);
    tunnel.append(
        "sec-websocket-protocol",
        HeaderValue::from_static("SPDY/3.1+portforward.k8s.io"),
    );
    assert_eq!(decide(&tunnel).unwrap_err().status, 403);
    assert_eq!(decide(&headers(&WS)).unwrap_err().status, 403);
    let no_key = headers(&[
        ("connection", "Upgrade"),
        ("upgrade", "websocket"),
        ("sec-websocket-version", "13"),
        ("sec-websocket-protocol", "v5.channel.k8s.io"),
    ]);
    assert_eq!(decide(&no_key).unwrap_err().status, 400);
}

#[test]
fn spdy_requests_keep_their_remotecommand_version() {
    let h = headers(&[
        ("connection", "Upgrade"),
        ("upgrade", "SPDY/3.1"),
        ("x-stream-protocol-version", "v5.channel.k8s.io"),
        ("x-stream-protocol-version", "v4.channel.k8s.io"),
    ]);
    let t = decide(&h).unwrap();
    assert_eq!(t, Transport::Spdy(Protocol::V4));
    assert_eq!((t.as_str(), t.protocol()), ("spdy", "v4.channel.k8s.io"));
}

type Client = WebSocketStream<DuplexStream>;

/// A WebSocket exec session on one end of a pipe, its client on the other.
async fn ws_exec(
    p: WsProtocol,
    query: &str,
    start: session::Starter,
) -> (Client, tokio::task::JoinHandle<End>) {
    let (a, b) = tokio::io::duplex(1 << 20);
    let options = protocol::exec_options(query).unwrap();
    let transport = Transport::WebSocket {
        protocol: p,
        accept: String::new(),
    };
    let session = tokio::spawn(async move {
        let t = session::Timeouts::default();
        match transport.open(b, &options, t).await {
            Ok(o) => session::exec(o, options, start, t, SessionClock::unobserved()).await,
            Err(end) => end,
        }
    });
    let client = WebSocketStream::from_raw_socket(a, Role::Client, None).await;
    (client, session)
}

/// Every message until the server's Close (included).
async fn until_close(c: &mut Client) -> Vec<Message> {
    let mut v = Vec::new();
    while let Some(m) = timeout(T, c.next()).await.expect("server silent") {
        let m = m.expect("read");
        let last = matches!(m, Message::Close(_));
        v.push(m);
        if last {
            break;
        }
    }
    v
}

/// The bytes sent on `channel` (binary protocols).
fn channel(msgs: &[Message], ch: u8) -> Vec<u8> {
    msgs.iter()
        .filter_map(|m| match m {
            Message::Binary(b) if b.first() == Some(&ch) => Some(b[1..].to_vec()),
            _ => None,
        })
        .flatten()
        .collect()
}

#[tokio::test]
async fn output_then_the_exit_code_on_channel_3_then_close() {
    let seen = Arc::new(Seen::default());
    let (mut c, session) = ws_exec(
        WsProtocol::V5,
        "command=sh&output=1&error=1",
        scripted("hi\n", "oops\n", None, 3, seen),
    )
    .await;
    let msgs = until_close(&mut c).await;
    assert_eq!(
        msgs[0],
        Message::Binary(Bytes::from_static(&[1])),
        "the first message is empty, on stdout"
    );
    assert_eq!(channel(&msgs, 1), b"hi\n");
    assert_eq!(channel(&msgs, 2), b"oops\n");
    let v: serde_json::Value = serde_json::from_slice(&channel(&msgs, 3)).unwrap();
    assert_eq!(v["reason"], "NonZeroExitCode");
    assert_eq!(v["details"]["causes"][0]["message"], "3");
    let Some(Message::Close(Some(frame))) = msgs.last() else {
        panic!("{msgs:?}")
    };
    assert_eq!(u16::from(frame.code), 1000);
    drop(c);
    assert_eq!(timeout(T, session).await.unwrap().unwrap(), End::Exited(3));
}

#[tokio::test]
async fn v5_stdin_reaches_the_command_and_the_close_signal_is_eof() {
    let seen = Arc::new(Seen::default());
    let (exit_tx, exit_rx) = tokio::sync::oneshot::channel();
    let (mut c, session) = ws_exec(
        WsProtocol::V5,
        "command=cat&input=1&output=1",
        scripted("", "", Some(exit_rx), 0, seen.clone()),
    )
    .await;
    c.send(Message::Binary(Bytes::from_static(b"\x00hello ")))
        .await
        .unwrap();
    c.send(Message::Binary(Bytes::from_static(b"\x00world")))
        .await
        .unwrap();
    c.send(Message::Binary(Bytes::from_static(&[0xFF, 0])))
        .await
        .unwrap();
    let got = crate::kubelet_api::stream::fixtures::eventually(|| {
        seen.stdin.lock().unwrap().as_slice() == b"hello world"
    })
    .await;
    assert!(got, "stdin never closed: {:?}", seen.stdin.lock().unwrap());
    exit_tx.send(0).unwrap();
    let msgs = until_close(&mut c).await;
    assert_eq!(
        channel(&msgs, 3),
        br#"{"metadata":{},"status":"Success"}"#.to_vec()
    );
    drop(c);
    assert_eq!(timeout(T, session).await.unwrap().unwrap(), End::Exited(0));
}

#[tokio::test]
async fn a_websocket_client_that_goes_away_kills_the_command() {
    let seen = Arc::new(Seen::default());
    let (_never, exit_rx) = tokio::sync::oneshot::channel();
    let (mut c, session) = ws_exec(
        WsProtocol::V4,
        "command=sleep&output=1",
        scripted("", "", Some(exit_rx), 0, seen.clone()),
    )
    .await;
    // The first message says the session is ready.
    let first = timeout(T, c.next()).await.unwrap().unwrap().unwrap();
    assert_eq!(first, Message::Binary(Bytes::from_static(&[1])));
    assert!(!seen.killed.load(Ordering::SeqCst));
    drop(c);
    assert_eq!(timeout(T, session).await.unwrap().unwrap(), End::ClientGone);
    assert!(seen.killed.load(Ordering::SeqCst), "the command was killed");
}

#[tokio::test]
async fn pings_are_answered_and_base64_output_is_text() {
    let seen = Arc::new(Seen::default());
    let (exit_tx, exit_rx) = tokio::sync::oneshot::channel();
    let (mut c, session) = ws_exec(
        WsProtocol::V4Base64,
        "command=sh&output=1",
        scripted("hi", "", Some(exit_rx), 0, seen),
    )
    .await;
    c.send(Message::Ping(Bytes::from_static(b"p1")))
        .await
        .unwrap();
    let mut pong = false;
    let mut text = Vec::new();
    while !(pong && text.contains(&"1aGk=".to_owned())) {
        match timeout(T, c.next()).await.unwrap().unwrap().unwrap() {
            Message::Pong(b) => pong = b.as_ref() == b"p1",
            Message::Text(t) => text.push(t.as_str().to_owned()),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(text[0], "1", "the first message is empty, on stdout");
    exit_tx.send(0).unwrap();
    let msgs = until_close(&mut c).await;
    assert!(msgs.contains(&Message::text(
        "3eyJtZXRhZGF0YSI6e30sInN0YXR1cyI6IlN1Y2Nlc3MifQ=="
    )));
    drop(c);
    assert_eq!(timeout(T, session).await.unwrap().unwrap(), End::Exited(0));
}

#[tokio::test]
async fn terminal_sizes_arrive_on_channel_4() {
    let seen = Arc::new(Seen::default());
    let (exit_tx, exit_rx) = tokio::sync::oneshot::channel();
    let (mut c, session) = ws_exec(
        WsProtocol::V5,
        "command=sh&input=1&output=1&tty=1",
        scripted("$ ", "", Some(exit_rx), 0, seen.clone()),
    )
    .await;
    c.send(Message::Binary(Bytes::from_static(
        b"\x04{\"Width\":120,\"Height\":40}\n",
    )))
    .await
    .unwrap();
    let got = crate::kubelet_api::stream::fixtures::eventually(|| {
        seen.sizes
            .lock()
            .unwrap()
            .iter()
            .any(|s| s.cols == 120 && s.rows == 40)
    })
    .await;
    assert!(got, "{:?}", seen.sizes.lock().unwrap());
    exit_tx.send(0).unwrap();
    until_close(&mut c).await;
    drop(c);
    assert_eq!(timeout(T, session).await.unwrap().unwrap(), End::Exited(0));
}
