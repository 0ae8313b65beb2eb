use super::*;

const T: &str = "2024-05-06T07:08:09.012345678Z";

fn ts(s: &str) -> Timestamp {
    s.parse().unwrap()
}

fn lines(out: &[u8]) -> Vec<&[u8]> {
    out.split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn time_is_formatted_with_nine_fraction_digits_in_utc() {
    let cases = [
        (
            "2024-05-06T07:08:09.012345678Z",
            "2024-05-06T07:08:09.012345678Z",
        ),
        ("2024-05-06T07:08:09Z", "2024-05-06T07:08:09.000000000Z"),
        (
            "2024-05-06T07:08:09.5+02:00",
            "2024-05-06T05:08:09.500000000Z",
        ),
        (
            "1999-12-31T23:59:59.000000001Z",
            "1999-12-31T23:59:59.000000001Z",
        ),
    ];
    for (input, want) in cases {
        assert_eq!(format_time(ts(input)), want, "{input}");
    }
}

#[test]
fn records_round_trip() {
    let cases: [(Stream, Tag, &[u8]); 5] = [
        (Stream::Stdout, Tag::Full, b"hello world"),
        (Stream::Stderr, Tag::Partial, b"part"),
        (Stream::Stdout, Tag::Full, b""),
        (Stream::Stderr, Tag::Full, b"  spaces  inside "),
        (Stream::Stdout, Tag::Full, b"\xff\xfe not utf-8"),
    ];
    for (stream, tag, content) in cases {
        let mut out = Vec::new();
        encode(&mut out, T, stream, tag, content);
        assert_eq!(out.last(), Some(&b'\n'));
        let rec = parse(&out[..out.len() - 1]).unwrap();
        assert_eq!(
            rec,
            Record {
                time: ts(T),
                stream,
                tag,
                content
            }
        );
    }
}

#[test]
fn the_exact_bytes_of_a_record() {
    let mut out = Vec::new();
    encode(&mut out, T, Stream::Stderr, Tag::Partial, b"a b");
    assert_eq!(out, b"2024-05-06T07:08:09.012345678Z stderr P a b\n");
}

#[test]
fn parse_accepts_what_runtimes_write() {
    let rec = parse(b"2024-05-06T07:08:09.5Z stdout F:x:y hi").unwrap();
    assert_eq!((rec.tag, rec.content), (Tag::Full, &b"hi"[..]));
    let rec = parse(b"2024-05-06T09:08:09.01+02:00 stderr P:x hi").unwrap();
    assert_eq!(rec.tag, Tag::Partial);
    assert_eq!(format_time(rec.time), "2024-05-06T07:08:09.010000000Z");
}

#[test]
fn malformed_records_name_the_bad_field() {
    let cases: [(&[u8], ParseError); 6] = [
        (b"", ParseError::MissingTimestamp),
        (b"2024-05-06T07:08:09Z", ParseError::MissingTimestamp),
        (b"yesterday stdout F x", ParseError::BadTimestamp),
        (b"2024-05-06T07:08:09Z stdout", ParseError::MissingStream),
        (b"2024-05-06T07:08:09Z stdin F x", ParseError::BadStream),
        (b"2024-05-06T07:08:09Z stdout F", ParseError::MissingTag),
    ];
    for (line, want) in cases {
        assert_eq!(parse(line), Err(want), "{}", String::from_utf8_lossy(line));
    }
}

#[test]
fn pieces_are_cut_at_16_kib() {
    // (piece length, ends line) -> tags and lengths of the records written.
    type Case = (usize, bool, &'static [(Tag, usize)]);
    let cases: [Case; 6] = [
        (0, true, &[(Tag::Full, 0)]),
        (0, false, &[]),
        (10, false, &[(Tag::Partial, 10)]),
        (MAX_CHUNK, true, &[(Tag::Full, MAX_CHUNK)]),
        (
            MAX_CHUNK + 1,
            true,
            &[(Tag::Partial, MAX_CHUNK), (Tag::Full, 1)],
        ),
        (
            2 * MAX_CHUNK + 5,
            false,
            &[
                (Tag::Partial, MAX_CHUNK),
                (Tag::Partial, MAX_CHUNK),
                (Tag::Partial, 5),
            ],
        ),
    ];
    for (len, ends, want) in cases {
        let piece = vec![b'x'; len];
        let mut out = Vec::new();
        encode_piece(&mut out, T, Stream::Stdout, &piece, ends);
        let got: Vec<(Tag, usize)> = lines(&out)
            .into_iter()
            .map(|l| parse(l).unwrap())
            .map(|r| (r.tag, r.content.len()))
            .collect();
        // An empty `F` record is the line `<time> stdout F ` with nothing after the tag.
        assert_eq!(got, want, "len {len} ends {ends}");
    }
}

#[test]
fn a_cut_line_joins_back_to_its_bytes() {
    let line: Vec<u8> = (0..40_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    let mut out = Vec::new();
    encode_piece(&mut out, T, Stream::Stdout, &line, true);
    let joined: Vec<u8> = lines(&out)
        .into_iter()
        .flat_map(|l| parse(l).unwrap().content.to_vec())
        .collect();
    assert_eq!(joined, line);
}
