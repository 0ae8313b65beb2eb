use super::*;

fn pieces(chunks: &[&[u8]]) -> (Vec<(usize, bool)>, usize) {
    let mut lines = Lines::default();
    let mut out = Vec::new();
    for c in chunks {
        lines.push(c, &mut out);
    }
    let got = out.iter().map(|p| (p.bytes.len(), p.ends_line)).collect();
    (got, lines.pending())
}

#[test]
fn lines_are_cut_at_newlines_and_held_back_until_finished() {
    let big = vec![b'x'; MAX_CHUNK + 3];
    type Case<'a> = (&'a [&'a [u8]], &'a [(usize, bool)], usize);
    let cases: [Case<'_>; 5] = [
        (&[b"a\nbb\n"], &[(1, true), (2, true)], 0),
        (&[b"a\nbb"], &[(1, true)], 2),
        (&[b"ab", b"c\n"], &[(3, true)], 0),
        (&[b"\n\n"], &[(0, true), (0, true)], 0),
        (&[&big], &[(MAX_CHUNK, false)], 3),
    ];
    for (chunks, want, pending) in cases {
        assert_eq!(pieces(chunks), (want.to_vec(), pending), "{chunks:?}");
    }
}

#[test]
fn flush_gives_up_the_unfinished_line() {
    let mut lines = Lines::default();
    let mut out = Vec::new();
    lines.push(b"abc", &mut out);
    lines.flush(false, &mut out);
    lines.flush(true, &mut out);
    assert_eq!(
        out,
        vec![Piece {
            bytes: b"abc".to_vec(),
            ends_line: false
        }],
        "a second flush has nothing to give"
    );
}

fn contents(out: &[u8]) -> Vec<String> {
    out.split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| {
            let r = cri::parse(l).unwrap();
            format!(
                "{} {} {}",
                r.stream.as_str(),
                r.tag.as_str(),
                String::from_utf8_lossy(r.content)
            )
        })
        .collect()
}

#[test]
fn a_truncated_file_is_read_again_from_its_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stdout");
    let mut f = Follower::new(path.clone(), Stream::Stdout, false, StartAt::Beginning);
    let mut out = Vec::new();
    f.poll("2024-01-01T00:00:00Z", false, &mut out).unwrap();
    assert!(out.is_empty(), "a missing file gives nothing");
    std::fs::write(&path, "one\ntwo\nunfin").unwrap();
    f.poll("2024-01-01T00:00:00Z", false, &mut out).unwrap();
    std::fs::write(&path, "new\n").unwrap();
    f.poll("2024-01-01T00:00:00Z", false, &mut out).unwrap();
    assert_eq!(
        contents(&out),
        [
            "stdout F one",
            "stdout F two",
            "stdout F unfin",
            "stdout F new"
        ]
    );
}

#[test]
fn starting_at_the_end_skips_earlier_runs_and_tags_tart_lines() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("vm.log");
    std::fs::write(&path, "old run\n").unwrap();
    let mut f = Follower::new(path.clone(), Stream::Stderr, true, StartAt::End);
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .and_then(|mut w| std::io::Write::write_all(&mut w, b"booted\nlast"))
        .unwrap();
    let mut out = Vec::new();
    f.poll("2024-01-01T00:00:00Z", true, &mut out).unwrap();
    assert_eq!(
        contents(&out),
        ["stderr F [tart] booted", "stderr F [tart] last"],
        "the last poll ends an unfinished line"
    );
}

#[test]
fn a_long_unfinished_line_is_written_in_pieces_and_tagged_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("vm.log");
    let mut f = Follower::new(path.clone(), Stream::Stderr, true, StartAt::Beginning);
    std::fs::write(&path, vec![b'x'; MAX_CHUNK + 10]).unwrap();
    let mut out = Vec::new();
    f.poll("2024-01-01T00:00:00Z", true, &mut out).unwrap();
    let recs: Vec<_> = out
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| cri::parse(l).unwrap())
        .map(|r| (r.tag, r.content.len(), r.content.starts_with(TART_PREFIX)))
        .collect();
    use cri::Tag::{Full, Partial};
    assert_eq!(
        recs,
        [
            (Partial, MAX_CHUNK, true),
            (Partial, TART_PREFIX.len(), false),
            (Full, 10, false)
        ]
    );
}
