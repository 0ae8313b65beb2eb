//! Frame bytes as spdystream puts them on the wire (docs/reference/kubelet-api.md §5.2).

use super::*;

fn hex(s: &str) -> Vec<u8> {
    s.split_whitespace()
        .map(|b| u8::from_str_radix(b, 16).unwrap())
        .collect()
}

fn table() -> Vec<(&'static str, Frame, Vec<u8>)> {
    vec![
        (
            "syn_stream",
            Frame::SynStream {
                stream_id: 1,
                associated_to: 0,
                priority: 0,
                flags: 0,
                headers: Bytes::from_static(&[0xab, 0xcd]),
            },
            hex("80 03 00 01 00 00 00 0c  00 00 00 01 00 00 00 00 00 00 ab cd"),
        ),
        (
            "syn_stream with fin and priority 7",
            Frame::SynStream {
                stream_id: 3,
                associated_to: 1,
                priority: 7,
                flags: FLAG_FIN,
                headers: Bytes::new(),
            },
            hex("80 03 00 01 01 00 00 0a  00 00 00 03 00 00 00 01 e0 00"),
        ),
        (
            "syn_reply",
            Frame::SynReply {
                stream_id: 1,
                flags: 0,
                headers: Bytes::from_static(&[0x78, 0xf9, 0xe3, 0xc6, 0xa7, 0xc2]),
            },
            hex("80 03 00 02 00 00 00 0a  00 00 00 01 78 f9 e3 c6 a7 c2"),
        ),
        (
            "rst_stream cancel",
            Frame::RstStream {
                stream_id: 5,
                status: RstStatus::Cancel,
            },
            hex("80 03 00 03 00 00 00 08  00 00 00 05 00 00 00 05"),
        ),
        (
            "settings (none)",
            Frame::Settings,
            hex("80 03 00 04 00 00 00 04  00 00 00 00"),
        ),
        (
            "ping",
            Frame::Ping(1),
            hex("80 03 00 06 00 00 00 04  00 00 00 01"),
        ),
        (
            "goaway",
            Frame::GoAway {
                last_good: 7,
                status: 0,
            },
            hex("80 03 00 07 00 00 00 08  00 00 00 07 00 00 00 00"),
        ),
        (
            "headers",
            Frame::Headers {
                stream_id: 9,
                flags: FLAG_FIN,
                headers: Bytes::from_static(&[1]),
            },
            hex("80 03 00 08 01 00 00 05  00 00 00 09 01"),
        ),
        (
            "window_update",
            Frame::WindowUpdate {
                stream_id: 1,
                delta: 65536,
            },
            hex("80 03 00 09 00 00 00 08  00 00 00 01 00 01 00 00"),
        ),
        (
            "data with fin",
            Frame::Data {
                stream_id: 3,
                flags: FLAG_FIN,
                data: Bytes::from_static(b"hi"),
            },
            hex("00 00 00 03 01 00 00 02  68 69"),
        ),
        (
            "empty data with fin (a half-close)",
            Frame::Data {
                stream_id: 5,
                flags: FLAG_FIN,
                data: Bytes::new(),
            },
            hex("00 00 00 05 01 00 00 00"),
        ),
    ]
}

#[test]
fn frames_encode_to_spdystreams_bytes() {
    for (name, frame, bytes) in table() {
        let mut out = BytesMut::new();
        encode(&frame, &mut out);
        assert_eq!(out.to_vec(), bytes, "{name}");
    }
}

#[test]
fn spdystreams_bytes_decode_to_frames() {
    for (name, frame, bytes) in table() {
        let mut buf = bytes.clone();
        buf.extend_from_slice(b"next frame");
        assert_eq!(decode(&buf).unwrap(), Some((frame, bytes.len())), "{name}");
    }
}

#[test]
fn a_frame_is_decoded_only_once_it_is_complete() {
    for (name, _, bytes) in table() {
        for cut in 0..bytes.len() {
            assert_eq!(decode(&bytes[..cut]).unwrap(), None, "{name} cut at {cut}");
        }
    }
}

#[test]
fn settings_entries_and_unknown_types_are_skipped_whole() {
    let settings = hex("80 03 00 04 00 00 00 0c  00 00 00 01 01 00 00 07 00 01 00 00");
    assert_eq!(decode(&settings).unwrap(), Some((Frame::Settings, 20)));
    let unknown = hex("80 03 00 0a 00 00 00 02  aa bb");
    assert_eq!(decode(&unknown).unwrap(), Some((Frame::Unknown(10), 10)));
}

#[test]
fn stream_ids_drop_the_reserved_bit() {
    let rst = hex("80 03 00 03 00 00 00 08  80 00 00 05 00 00 00 01");
    let (frame, _) = decode(&rst).unwrap().unwrap();
    assert_eq!(
        frame,
        Frame::RstStream {
            stream_id: 5,
            status: RstStatus::ProtocolError
        }
    );
}

#[test]
fn other_versions_and_short_control_frames_are_errors() {
    let v2 = hex("80 02 00 06 00 00 00 04  00 00 00 01");
    assert_eq!(decode(&v2), Err(FrameError::Version(2)));
    let short = hex("80 03 00 03 00 00 00 04  00 00 00 05");
    assert_eq!(decode(&short), Err(FrameError::Short { kind: 3, len: 4 }));
}

#[test]
fn rst_status_codes_round_trip() {
    for code in 0..12 {
        assert_eq!(RstStatus::from_code(code).code(), code);
    }
}
