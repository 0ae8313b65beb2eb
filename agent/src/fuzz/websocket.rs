//! Fuzz targets for what an exec, attach or port-forward client sends after the upgrade:
//! WebSocket channel messages ([`crate::kubelet_api::stream::websocket::frame`]) and the resize
//! stream's JSON ([`crate::kubelet_api::stream::remotecommand::protocol::ResizeDecoder`]).

use bytes::Bytes;
use tokio_tungstenite::tungstenite::Message;

use crate::kubelet_api::stream::{
    remotecommand::protocol::ResizeDecoder,
    websocket::frame::{self as ws_frame, Incoming, SERVED},
};
use tart::fuzz::{COPY_BOUND, Target, strings};

pub(super) fn targets() -> Vec<Target> {
    vec![
        Target {
            name: "ws_channel",
            run: ws_channel,
            seeds: ws_seeds,
            tokens: &["\u{ff}", "0", "1", "4", "aGk=", "=", "\u{e9}"],
            max_alloc: COPY_BOUND,
        },
        Target {
            name: "resize_stream",
            run: resize_stream,
            seeds: resize_seeds,
            tokens: &[
                "{\"Width\":",
                "\"Height\":",
                "}",
                "{",
                "65535",
                "65536",
                "-1",
                "1e3",
                "\"width\"",
            ],
            max_alloc: COPY_BOUND,
        },
    ]
}

/// One client message: the first byte picks the protocol (of those served) and whether the
/// message is text; the rest is the message. What decodes as data encodes back to the same
/// channel and bytes; and the rest, read as a channel (one the protocol can name) and its
/// bytes, is what the server's message on that channel decodes to.
fn ws_channel(data: &[u8]) {
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    let p = SERVED[usize::from(pick & 0x7f) % SERVED.len()];
    let msg = if pick & 0x80 == 0 {
        Message::Binary(Bytes::copy_from_slice(body))
    } else {
        Message::text(String::from_utf8_lossy(body).into_owned())
    };
    if let Ok(Incoming::Data(channel, payload)) = ws_frame::decode(p, &msg) {
        let again = ws_frame::decode(p, &ws_frame::encode(p, channel, &payload));
        assert_eq!(again, Ok(Incoming::Data(channel, payload)));
    }
    if let Some((&channel, bytes)) = body.split_first()
        && channel <= p.max_channel()
    {
        let back = ws_frame::decode(p, &ws_frame::encode(p, channel, bytes));
        assert_eq!(
            back,
            Ok(Incoming::Data(channel, Bytes::copy_from_slice(bytes)))
        );
    }
}

/// The resize stream, cut into DATA frames where the input's `\n`s are: never a panic, and
/// what is kept between frames stays bounded.
fn resize_stream(data: &[u8]) {
    let mut d = ResizeDecoder::default();
    for chunk in data.split_inclusive(|b| *b == b'\n') {
        if d.push(chunk).is_err() {
            return;
        }
    }
}

fn ws_seeds() -> Vec<Vec<u8>> {
    let mut seeds = Vec::new();
    for (i, _) in SERVED.iter().enumerate() {
        let pick = u8::try_from(i).unwrap_or(0);
        seeds.push([&[pick][..], b"\x00echo hi\n"].concat());
        seeds.push([&[pick][..], b"\x04{\"Width\":80,\"Height\":24}"].concat());
        seeds.push([&[pick][..], b"\xff\x00"].concat());
        seeds.push([&[pick | 0x80][..], b"0ZWNobyBoaQo="].concat());
        seeds.push([&[pick | 0x80][..], b"4eyJXaWR0aCI6ODB9"].concat());
    }
    seeds
}

fn resize_seeds() -> Vec<Vec<u8>> {
    strings(&[
        "{\"Width\":80,\"Height\":24}\n",
        "{\"Width\":80,\"Height\":24}{\"Width\":120,\"Height\":40}",
        "{\"width\":80,\n\"height\":24}",
        "{\"Width\":80,\"Height\":99999}",
        "[1,2]",
    ])
}
