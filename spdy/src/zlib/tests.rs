//! Header blocks against bytes from an independent zlib (Python's, level 9, SPDY dictionary)
//! and against kubectl's first bytes (docs/reference/kubelet-api.md §5.2).

use super::*;

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn owned(h: &[(&str, &str)]) -> Headers {
    h.iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

/// Three blocks from one compression context, as a client sends them in order.
const BLOCKS: [&str; 3] = [
    "78f9e3c6a7c202a62346703a2b294a4dcc851625aca9a08006000000ffff",
    "c22a054ccc29f9a52500000000ffff",
    "02a55548b15d04ce2116061606409ab30812cd99a0e4cf6880a11b54462502000000ffff",
];

#[test]
fn the_dictionary_is_spdy3s() {
    assert_eq!(DICTIONARY.len(), 1423);
    assert_eq!(adler32(DICTIONARY), 0xE3C6_A7C2);
}

#[test]
fn one_inflater_reads_a_peers_blocks_in_order() {
    let mut inf = Inflater::default();
    let want = [
        owned(&[("streamtype", "error")]),
        owned(&[("streamtype", "stdout")]),
        owned(&[("port", "8080"), ("requestid", "0"), ("streamtype", "data")]),
    ];
    for (block, want) in BLOCKS.iter().zip(want) {
        assert_eq!(inf.headers(&hex(block)).unwrap(), want);
    }
}

#[test]
fn a_block_read_out_of_context_fails() {
    let mut inf = Inflater::default();
    assert!(inf.headers(&hex(BLOCKS[1])).is_err());
}

#[test]
fn our_blocks_start_like_gos_and_read_back_in_order() {
    let mut def = Deflater::default();
    let mut inf = Inflater::default();
    let first = def.block(&[]);
    assert_eq!(first[..6], [0x78, 0xf9, 0xe3, 0xc6, 0xa7, 0xc2]);
    assert_eq!(first[first.len() - 4..], [0, 0, 0xff, 0xff], "sync flush");
    assert_eq!(inf.headers(&first).unwrap(), Headers::new());
    let big = "v".repeat(10_000);
    for h in [
        vec![("streamtype", "stdout")],
        vec![("a", big.as_str()), ("b", "x\0y")],
        vec![],
    ] {
        let block = def.block(&h);
        assert_eq!(inf.headers(&block).unwrap(), owned(&h));
    }
}

#[test]
fn header_names_follow_spdystreams_rules() {
    let ok = serialize(&[("streamtype", "error"), ("port", "80")]);
    assert_eq!(parse(&ok).unwrap().len(), 2);
    for bad in [
        vec![("StreamType", "error")],
        vec![("connection", "close")],
        vec![("transfer-encoding", "chunked")],
        vec![("a", "1"), ("a", "2")],
        vec![("", "x")],
    ] {
        let raw = serialize(&bad);
        assert!(
            matches!(parse(&raw), Err(HeaderError::BadName(_))),
            "{bad:?}"
        );
    }
}

#[test]
fn cut_or_padded_blocks_are_malformed() {
    let raw = serialize(&[("streamtype", "error")]);
    for cut in 0..raw.len() {
        assert_eq!(parse(&raw[..cut]), Err(HeaderError::Malformed), "cut {cut}");
    }
    let mut padded = raw.clone();
    padded.push(0);
    assert_eq!(parse(&padded), Err(HeaderError::Malformed));
}

#[test]
fn get_finds_a_value_by_name() {
    let h = owned(&[("streamtype", "stdin"), ("port", "80")]);
    assert_eq!(get(&h, "port"), Some("80"));
    assert_eq!(get(&h, "requestid"), None);
}

#[test]
fn a_block_that_inflates_past_the_bound_is_refused() {
    let mut def = Deflater::default();
    let mut inf = Inflater::default();
    // Exactly the bound: the value plus the block's count, name and two lengths (13 bytes).
    let fits = "f".repeat(MAX_HEADER_BLOCK - 13);
    let block = def.block(&[("x", fits.as_str())]);
    assert_eq!(inf.headers(&block).unwrap()[0].1.len(), fits.len());
    let bomb = "b".repeat(4 * MAX_HEADER_BLOCK);
    let block = def.block(&[("x", bomb.as_str())]);
    assert!(block.len() < MAX_HEADER_BLOCK / 64, "{} bytes", block.len());
    assert_eq!(inf.headers(&block), Err(HeaderError::TooLarge));
}
