//! Fuzz targets for SPDY/3.1 as the kubelet port reads it: frames, header blocks and their
//! zlib compression ([`spdy::frame`], [`spdy::zlib`]).

use bytes::{Bytes, BytesMut};

use spdy::{
    frame::{self, Frame},
    zlib::{self, Deflater, Inflater, MAX_HEADER_BLOCK},
};
use tart::fuzz::Target;

/// The most one input may allocate: a header block inflates to at most [`MAX_HEADER_BLOCK`]
/// bytes, parsed into names and values (two strings and a set entry per header, about 16
/// times the block's size for a block of many short names), plus the frames copied out of
/// the input.
const BOUND: usize = 20 * MAX_HEADER_BLOCK;

/// [`spdy_header_block`] holds a block parsed twice.
const TWICE: usize = 2 * BOUND;

/// The largest raw block [`spdy_header_block`] also sends through compression.
const COMPRESSED_ROUND_TRIP: usize = 64 << 10;

pub(super) fn targets() -> Vec<Target> {
    vec![
        Target {
            name: "spdy_frames",
            run: spdy_frames,
            seeds: frame_seeds,
            tokens: &[
                "\u{80}\u{3}\0\u{1}",
                "\u{80}\u{3}\0\u{8}",
                "\0\0\0\u{1}",
                "\u{ff}\u{ff}\u{ff}",
            ],
            max_alloc: BOUND,
        },
        Target {
            name: "spdy_header_block",
            run: spdy_header_block,
            seeds: header_block_seeds,
            tokens: &[
                "\0\0\0\u{1}",
                "\0\0\0\n",
                "streamtype",
                "port",
                "requestid",
                "\0",
            ],
            max_alloc: TWICE,
        },
        Target {
            name: "spdy_inflate",
            run: spdy_inflate,
            seeds: inflate_seeds,
            tokens: &[
                "\u{78}\u{f9}\u{e3}\u{c6}\u{a7}\u{c2}",
                "\0\0\u{ff}\u{ff}",
                "\u{78}\u{9c}",
            ],
            max_alloc: BOUND,
        },
    ]
}

/// A connection's bytes, read as `conn` reads them: frames one after the other, every header
/// block through the one inflater. Each frame decoded encodes back to the same frame.
fn spdy_frames(data: &[u8]) {
    let mut inflater = Inflater::default();
    let mut rest = data;
    while let Ok(Some((f, used))) = frame::decode(rest) {
        assert!(
            (8..=rest.len()).contains(&used),
            "used {used} of {}",
            rest.len()
        );
        rest = &rest[used..];
        let mut out = BytesMut::new();
        frame::encode(&f, &mut out);
        let again = frame::decode(&out).expect("an encoded frame decodes");
        assert_eq!(again, Some((f.clone(), out.len())));
        if let Frame::SynStream { headers, .. }
        | Frame::SynReply { headers, .. }
        | Frame::Headers { headers, .. } = f
            && inflater.headers(&headers).is_err()
        {
            // The shared context is lost: the connection ends here.
            return;
        }
    }
}

/// An uncompressed header block: what parses serializes back to itself, and comes through
/// this side's compression and the peer's decompression unchanged.
fn spdy_header_block(data: &[u8]) {
    let Ok(headers) = zlib::parse(data) else {
        return;
    };
    let pairs: Vec<(&str, &str)> = headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    assert_eq!(zlib::parse(&zlib::serialize(&pairs)).as_ref(), Ok(&headers));
    // Compression is exercised on inputs of the mutator's size, not on the large seeds.
    if data.len() > COMPRESSED_ROUND_TRIP {
        return;
    }
    let block = Deflater::default().block(&pairs);
    assert_eq!(Inflater::default().headers(&block).as_ref(), Ok(&headers));
}

/// Compressed bytes from the peer, two blocks in one context (the first two bytes give the
/// first block's length): never a panic, and never more than [`MAX_HEADER_BLOCK`] inflated.
fn spdy_inflate(data: &[u8]) {
    let Some((len, body)) = data.split_first_chunk::<2>() else {
        return;
    };
    let (a, b) = body.split_at(usize::from(u16::from_be_bytes(*len)).min(body.len()));
    let mut inflater = Inflater::default();
    for block in [a, b] {
        let Ok(h) = inflater.headers(block) else {
            return;
        };
        // Every inflated byte gives at most one character (invalid ones become U+FFFD).
        let size: usize = h.iter().map(|(n, v)| n.len() + v.chars().count() + 8).sum();
        assert!(size <= MAX_HEADER_BLOCK, "{size} bytes of headers");
    }
}

/// `block` after its length, as [`spdy_inflate`] reads its first block.
fn with_len(a: &[u8], b: &[u8]) -> Vec<u8> {
    let len = u16::try_from(a.len()).unwrap_or(u16::MAX);
    [&len.to_be_bytes()[..], a, b].concat()
}

/// The blocks kubectl's first streams carry, compressed in one context.
fn kubectl_blocks() -> Vec<Vec<u8>> {
    let mut d = Deflater::default();
    [
        vec![("streamtype", "error")],
        vec![("streamtype", "stdin")],
        vec![("streamtype", "stdout")],
        vec![("streamtype", "resize")],
        vec![("port", "8080"), ("requestid", "0"), ("streamtype", "data")],
    ]
    .iter()
    .map(|h| d.block(h))
    .collect()
}

fn frame_seeds() -> Vec<Vec<u8>> {
    let mut stream = BytesMut::new();
    for (i, block) in kubectl_blocks().into_iter().enumerate() {
        let id = u32::try_from(2 * i + 1).unwrap_or(1);
        frame::encode(
            &Frame::SynStream {
                stream_id: id,
                associated_to: 0,
                priority: 0,
                flags: 0,
                headers: Bytes::from(block),
            },
            &mut stream,
        );
    }
    let others = [
        Frame::Data {
            stream_id: 3,
            flags: frame::FLAG_FIN,
            data: Bytes::from_static(b"echo hi\n"),
        },
        Frame::Data {
            stream_id: 7,
            flags: 0,
            data: Bytes::from_static(br#"{"Width":80,"Height":24}"#),
        },
        Frame::Ping(1),
        Frame::Settings,
        Frame::WindowUpdate {
            stream_id: 1,
            delta: 65536,
        },
        Frame::RstStream {
            stream_id: 1,
            status: frame::RstStatus::Cancel,
        },
        Frame::GoAway {
            last_good: 9,
            status: 0,
        },
        Frame::Unknown(5),
    ];
    let mut seeds = vec![stream.to_vec()];
    for f in others {
        let mut one = BytesMut::new();
        frame::encode(&f, &mut one);
        stream.extend_from_slice(&one);
        seeds.push(one.to_vec());
    }
    seeds.push(stream.to_vec());
    seeds
}

fn header_block_seeds() -> Vec<Vec<u8>> {
    let many: Vec<String> = (0..50_000).map(|i| format!("x-{i}")).collect();
    let many: Vec<(&str, &str)> = many.iter().map(|n| (n.as_str(), "")).collect();
    vec![
        zlib::serialize(&[("streamtype", "error")]),
        zlib::serialize(&[("port", "8080"), ("requestid", "0"), ("streamtype", "data")]),
        zlib::serialize(&[]),
        // Many distinct names: reading them must take time in proportion to their number.
        zlib::serialize(&many),
    ]
}

fn inflate_seeds() -> Vec<Vec<u8>> {
    let blocks = kubectl_blocks();
    let mut seeds: Vec<Vec<u8>> = blocks.windows(2).map(|w| with_len(&w[0], &w[1])).collect();
    // A block that inflates past the bound: one value of 2 MiB, compressed to a few KiB.
    let big = "a".repeat(2 * MAX_HEADER_BLOCK);
    let bomb = Deflater::default().block(&[("x", big.as_str())]);
    seeds.push(with_len(&bomb, &[]));
    seeds
}
