//! The WebSocket channel protocols: negotiation, the accept key, and channel framing both ways.

use super::*;

#[test]
fn the_server_order_prefers_v5_whatever_the_client_lists_first() {
    let kubectl = ["v5.channel.k8s.io", "v4.channel.k8s.io"];
    assert_eq!(negotiate_among(&SERVED, kubectl), Some(WsProtocol::V5));
    let reversed = ["v4.channel.k8s.io, v5.channel.k8s.io"];
    assert_eq!(negotiate_among(&SERVED, reversed), Some(WsProtocol::V5));
    assert_eq!(
        negotiate_among(&SERVED, ["base64.channel.k8s.io", "channel.k8s.io"]),
        Some(WsProtocol::V1)
    );
    assert_eq!(
        negotiate_among(&SERVED, ["v4.base64.channel.k8s.io"]),
        Some(WsProtocol::V4Base64)
    );
}

#[test]
fn the_port_forward_tunnel_and_unknown_protocols_are_not_served() {
    assert_eq!(
        negotiate_among(&SERVED, ["SPDY/3.1+portforward.k8s.io"]),
        None
    );
    assert_eq!(negotiate_among(&SERVED, ["v6.channel.k8s.io", ""]), None);
    assert_eq!(negotiate_among(&SERVED, std::iter::empty()), None);
    let kube_rs = ["v5.channel.k8s.io", "v4.channel.k8s.io"];
    assert_eq!(
        negotiate_among(&FORWARD_SERVED, kube_rs),
        Some(WsProtocol::V4),
        "port-forward has no v5"
    );
}

#[test]
fn the_accept_key_is_rfc_6455s_example() {
    assert_eq!(
        accept_key("dGhlIHNhbXBsZSBub25jZQ=="),
        "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
    );
}

#[test]
fn binary_protocols_prefix_the_channel_byte() {
    let m = encode(WsProtocol::V5, STDOUT, b"hi\n");
    assert_eq!(m, Message::Binary(Bytes::from_static(b"\x01hi\n")));
    let empty = encode(WsProtocol::V4, STDERR, b"");
    assert_eq!(empty, Message::Binary(Bytes::from_static(b"\x02")));
    let back = decode(WsProtocol::V4, &encode(WsProtocol::V4, RESIZE, b"{}")).unwrap();
    assert_eq!(back, Incoming::Data(RESIZE, Bytes::from_static(b"{}")));
}

#[test]
fn base64_protocols_send_text_with_an_ascii_channel_digit() {
    let m = encode(WsProtocol::V4Base64, ERROR, b"hi");
    assert_eq!(m, Message::text("3aGk="));
    let stdin = Message::text("0aGk=");
    assert_eq!(
        decode(WsProtocol::V1Base64, &stdin),
        Ok(Incoming::Data(STDIN, Bytes::from_static(b"hi")))
    );
    assert_eq!(
        decode(WsProtocol::V1Base64, &Message::text("0!!")),
        Err(FrameError::Base64)
    );
    // A first character of several bytes in UTF-8 is not a channel digit.
    for text in ["\u{e9}aGk=", "\u{ff}", "\u{1f600}0aGk="] {
        assert_eq!(
            decode(WsProtocol::V4Base64, &Message::text(text)),
            Err(FrameError::Base64),
            "{text:?}"
        );
    }
}

#[test]
fn text_and_binary_messages_are_read_alike() {
    // python-kubernetes' `write_stdin("hi")` on a binary protocol: a text message.
    let text = Message::text("\u{0}hi");
    let hi = Ok(Incoming::Data(STDIN, Bytes::from_static(b"hi")));
    assert_eq!(decode(WsProtocol::V4, &text), hi);
    assert_eq!(decode(WsProtocol::V5, &text), hi);
    assert_eq!(decode(WsProtocol::V1, &text), hi);
    // A binary message on a base64 protocol is still base64.
    let bin = Message::Binary(Bytes::from_static(b"0aGk="));
    assert_eq!(decode(WsProtocol::V4Base64, &bin), hi);
    assert_eq!(
        decode(
            WsProtocol::V4Base64,
            &Message::Binary(Bytes::from_static(b"0!!"))
        ),
        Err(FrameError::Base64)
    );
    assert_eq!(
        decode(
            WsProtocol::V4Base64,
            &Message::Binary(Bytes::from_static(b"\xc3aGk="))
        ),
        Err(FrameError::Base64),
        "a non-ASCII first byte is not a channel digit"
    );
}

#[test]
fn v5_reads_the_close_signal_and_older_versions_do_not() {
    let close = Message::Binary(Bytes::from_static(&[0xFF, STDIN]));
    assert_eq!(decode(WsProtocol::V5, &close), Ok(Incoming::Close(STDIN)));
    assert_eq!(
        decode(WsProtocol::V4, &close),
        Ok(Incoming::Data(0xFF, Bytes::from_static(&[STDIN])))
    );
    let long = Message::Binary(Bytes::from_static(&[0xFF, 0, 0]));
    assert_eq!(
        decode(WsProtocol::V5, &long),
        Err(FrameError::CloseSignal(3))
    );
}

#[test]
fn empty_and_control_messages_mean_nothing() {
    for m in [
        Message::Binary(Bytes::new()),
        Message::Ping(Bytes::from_static(b"p")),
        Message::Pong(Bytes::new()),
        Message::Close(None),
    ] {
        assert_eq!(decode(WsProtocol::V5, &m), Ok(Incoming::Nothing), "{m:?}");
    }
}

#[test]
fn statuses_follow_the_remotecommand_version_of_the_protocol() {
    for p in [WsProtocol::V5, WsProtocol::V4, WsProtocol::V4Base64] {
        assert_eq!(p.remotecommand(), Protocol::V4);
    }
    for p in [WsProtocol::V1, WsProtocol::V1Base64] {
        assert_eq!(p.remotecommand(), Protocol::V1);
    }
}
