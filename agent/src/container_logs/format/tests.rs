use super::*;

fn ts(s: &str) -> Timestamp {
    s.parse().unwrap()
}

fn rec(time: &str, stream: &str, tag: &str, content: &str) -> Vec<u8> {
    format!("{time} {stream} {tag} {content}").into_bytes()
}

const T1: &str = "2024-05-06T07:08:01.000000000Z";
const T2: &str = "2024-05-06T07:08:02.000000000Z";
const T3: &str = "2024-05-06T07:08:03.500000000Z";

fn records() -> Vec<Vec<u8>> {
    vec![
        rec(T1, "stdout", "F", "one"),
        rec(T2, "stderr", "P", "tw"),
        rec(T2, "stderr", "F", "o"),
        rec(T3, "stdout", "F", "three"),
    ]
}

fn run(q: LogQuery) -> (String, Flow) {
    let mut f = Formatter::new(&q, ts("2024-05-06T07:08:04Z"));
    let mut out = Vec::new();
    let mut flow = Flow::More;
    for r in records() {
        flow = f.push(&r, &mut out);
        if flow == Flow::Done {
            break;
        }
    }
    (String::from_utf8(out).unwrap(), flow)
}

#[test]
fn output_is_the_content_with_partial_lines_joined() {
    assert_eq!(run(LogQuery::default()).0, "one\ntwo\nthree\n");
}

#[test]
fn timestamps_prefix_each_line_once() {
    let q = LogQuery {
        timestamps: true,
        ..Default::default()
    };
    assert_eq!(
        run(q).0,
        format!("{T1} one\n{T2} two\n{T3} three\n"),
        "the continuation of a partial line gets no prefix"
    );
}

#[test]
fn since_skips_older_records() {
    let cases = [
        (None, Some(T2), "two\nthree\n"),
        (Some(1), None, "three\n"),
        // The later of the two wins.
        (Some(3), Some(T3), "three\n"),
        (Some(1), Some(T1), "three\n"),
        (Some(3600), None, "one\ntwo\nthree\n"),
    ];
    for (secs, time, want) in cases {
        let q = LogQuery {
            since_seconds: secs,
            since_time: time.map(ts),
            ..Default::default()
        };
        assert_eq!(run(q).0, want, "{secs:?} {time:?}");
    }
}

#[test]
fn limit_bytes_cuts_the_crossing_record_and_ends() {
    let cases = [
        (1, "o", Flow::Done),
        (4, "one\n", Flow::Done),
        (6, "one\ntw", Flow::Done),
        (9, "one\ntwo\nt", Flow::Done),
        (100, "one\ntwo\nthree\n", Flow::More),
    ];
    for (limit, want, flow) in cases {
        let q = LogQuery {
            limit_bytes: Some(limit),
            ..Default::default()
        };
        assert_eq!(run(q), (want.to_owned(), flow), "limit {limit}");
    }
}

#[test]
fn limit_bytes_counts_the_timestamp_prefix() {
    let q = LogQuery {
        limit_bytes: Some(T1.len() as u64 + 3),
        timestamps: true,
        ..Default::default()
    };
    assert_eq!(run(q), (format!("{T1} on"), Flow::Done));
}

#[test]
fn lines_that_are_not_records_are_skipped() {
    let mut f = Formatter::new(&LogQuery::default(), ts(T3));
    let mut out = Vec::new();
    assert_eq!(f.push(b"garbage", &mut out), Flow::More);
    assert_eq!(f.push(&rec(T1, "stdout", "F", "ok"), &mut out), Flow::More);
    assert_eq!(out, b"ok\n");
}
