//! The legacy WebSocket port-forward: the query's ports, and whole sessions against a local
//! listener standing in for the guest, driven by tungstenite's client role.

use futures::{SinkExt, StreamExt};
use tokio::net::TcpListener;
use tokio_tungstenite::{
    WebSocketStream,
    tungstenite::{Message, protocol::Role},
};

use super::*;
use crate::kubelet_api::stream::fixtures::T;

#[test]
fn the_ports_come_from_the_query_as_kubelet_reads_them() {
    assert_eq!(
        ports("port=80,443&port=8080", WsProtocol::V4),
        Ok(vec![80, 443, 8080])
    );
    assert_eq!(
        ports("", WsProtocol::V4),
        Err("query parameter \"port\" is required".to_owned())
    );
    assert_eq!(
        ports("port=", WsProtocol::V4),
        Err("query parameter \"port\" cannot be empty".to_owned())
    );
    assert!(
        ports("port=0", WsProtocol::V4)
            .unwrap_err()
            .contains("must be > 0")
    );
    assert!(
        ports("port=http", WsProtocol::V4)
            .unwrap_err()
            .contains("unable to parse")
    );
    assert!(
        ports("port=70000", WsProtocol::V4)
            .unwrap_err()
            .contains("unable to parse")
    );
}

#[test]
fn a_base64_port_forward_has_channels_for_40_ports() {
    let query = |n: u16| {
        let list: Vec<String> = (1..=n).map(|p| p.to_string()).collect();
        format!("port={}", list.join(","))
    };
    assert_eq!(
        ports(&query(40), WsProtocol::V4Base64).map(|p| p.len()),
        Ok(40)
    );
    assert_eq!(
        ports(&query(41), WsProtocol::V4Base64),
        Err("at most 40 ports per request".to_owned())
    );
    assert_eq!(ports(&query(127), WsProtocol::V4).map(|p| p.len()), Ok(127));
    assert!(ports(&query(128), WsProtocol::V4).is_err());
    // The last port's error channel is the last one the protocol can name.
    let last = u8::try_from(2 * 40 - 1).unwrap();
    assert_eq!(last, WsProtocol::V4Base64.max_channel());
}

/// A port-forward session to `ports` of 127.0.0.1 and its client.
async fn session(ports: Vec<u16>) -> WebSocketStream<tokio::io::DuplexStream> {
    let (a, b) = tokio::io::duplex(1 << 16);
    tokio::spawn(serve(
        b,
        WsProtocol::V4,
        ports,
        "127.0.0.1".parse().unwrap(),
        "p1, uid u1".into(),
        crate::kubelet_api::stream::remotecommand::session::IDLE,
    ));
    WebSocketStream::from_raw_socket(a, Role::Client, None).await
}

async fn next(c: &mut WebSocketStream<tokio::io::DuplexStream>) -> Option<Message> {
    timeout(T, c.next())
        .await
        .expect("server silent")
        .map(|m| m.expect("read"))
}

#[tokio::test]
async fn each_channel_starts_with_its_port_then_bytes_flow_both_ways() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let guest = tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut buf = [0u8; 4];
        s.read_exact(&mut buf).await.unwrap();
        s.write_all(b"pong:").await.unwrap();
        s.write_all(&buf).await.unwrap();
        buf
    });
    let mut c = session(vec![port]).await;
    let [lo, hi] = port.to_le_bytes();
    assert_eq!(next(&mut c).await, Some(Message::binary(vec![0, lo, hi])));
    assert_eq!(next(&mut c).await, Some(Message::binary(vec![1, lo, hi])));
    c.send(Message::binary(b"\x00ping".to_vec())).await.unwrap();
    let mut got = Vec::new();
    loop {
        match next(&mut c).await {
            Some(Message::Binary(b)) => {
                assert_eq!(b[0], 0, "data channel");
                got.extend_from_slice(&b[1..]);
            }
            Some(Message::Close(_)) | None => break,
            Some(other) => panic!("{other:?}"),
        }
    }
    assert_eq!(got, b"pong:ping", "the guest's close ends the session");
    assert_eq!(&timeout(T, guest).await.unwrap().unwrap(), b"ping");
}

#[tokio::test]
async fn a_refused_port_is_kubelets_line_on_its_error_channel() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let mut c = session(vec![port]).await;
    let mut error = Vec::new();
    loop {
        match next(&mut c).await {
            Some(Message::Binary(b)) if b[0] == 1 => error.extend_from_slice(&b[1..]),
            Some(Message::Binary(_)) => {}
            Some(Message::Close(_)) | None => break,
            Some(other) => panic!("{other:?}"),
        }
    }
    let text = String::from_utf8_lossy(&error[2..]).into_owned();
    assert!(
        text.starts_with(&format!("error forwarding port {port} to pod p1, uid u1: ")),
        "{text:?}"
    );
}
