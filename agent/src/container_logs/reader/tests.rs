use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;

use super::*;
use crate::container_logs::cri::{self, Stream as Out};
use crate::container_logs::wake::pace::Periods;
use crate::container_logs::writer::{Rotation, RunLog};

const WAIT: Duration = Duration::from_secs(5);

fn pod() -> PodLogId {
    PodLogId {
        namespace: "ns".into(),
        name: "p".into(),
        uid: "u1".into(),
    }
}

/// Records `lines` in the Pod's container `c`, run `restart`, one a second from `t0`.
fn write_run(root: &Path, restart: u32, rot: Rotation, lines: &[&str]) -> RunLog {
    let dir = pod().container_dir(root, "c").unwrap();
    let mut log = RunLog::open(&dir, restart, rot).unwrap();
    for (i, l) in lines.iter().enumerate() {
        append(&mut log, &format!("2024-05-06T07:08:{:02}Z", i), l);
    }
    log
}

fn append(log: &mut RunLog, time: &str, line: &str) {
    let time = cri::format_time(time.parse().unwrap());
    let mut batch = Vec::new();
    cri::encode_piece(&mut batch, &time, Out::Stdout, line.as_bytes(), true);
    log.append(&mut batch, Timestamp::now()).unwrap();
}

/// The OS's watch with periods no test waits for: a follower sees each change through it.
fn watch() -> LogWatch {
    LogWatch::os_for_tests(Periods::never())
}

async fn read_all(root: &Path, q: LogQuery) -> Result<String, LogError> {
    let s = read(root, &pod(), "c", &q, &watch()).await?;
    let chunks: Vec<_> = tokio::time::timeout(WAIT, s.collect::<Vec<_>>())
        .await
        .expect("the stream ends");
    let bytes: Vec<u8> = chunks
        .into_iter()
        .flat_map(|c| c.unwrap().to_vec())
        .collect();
    Ok(String::from_utf8(bytes).unwrap())
}

fn small() -> Rotation {
    // Two records of these tests a file.
    Rotation {
        max_bytes: 90,
        max_files: 10,
    }
}

#[tokio::test]
async fn tail_counts_lines_across_rotated_files() {
    let root = tempfile::tempdir().unwrap();
    write_run(root.path(), 0, small(), &["a", "b", "c", "d", "e"]);
    let dir = pod().container_dir(root.path(), "c").unwrap();
    assert_eq!(files::list(&dir).unwrap()[&0].rotated.len(), 2);
    let cases = [
        (None, "a\nb\nc\nd\ne\n"),
        (Some(0), ""),
        (Some(1), "e\n"),
        (Some(3), "c\nd\ne\n"),
        (Some(9), "a\nb\nc\nd\ne\n"),
    ];
    for (tail, want) in cases {
        let q = LogQuery {
            tail_lines: tail,
            ..Default::default()
        };
        assert_eq!(read_all(root.path(), q).await.unwrap(), want, "{tail:?}");
    }
}

#[tokio::test]
async fn since_timestamps_and_limit_bytes_apply_to_the_stream() {
    let root = tempfile::tempdir().unwrap();
    write_run(root.path(), 0, small(), &["a", "b", "c"]);
    let q = LogQuery {
        since_time: Some("2024-05-06T07:08:01Z".parse().unwrap()),
        timestamps: true,
        ..Default::default()
    };
    assert_eq!(
        read_all(root.path(), q).await.unwrap(),
        "2024-05-06T07:08:01.000000000Z b\n2024-05-06T07:08:02.000000000Z c\n"
    );
    let q = LogQuery {
        limit_bytes: Some(3),
        ..Default::default()
    };
    assert_eq!(read_all(root.path(), q).await.unwrap(), "a\nb");
}

#[tokio::test]
async fn previous_reads_the_run_before_the_newest() {
    let root = tempfile::tempdir().unwrap();
    write_run(root.path(), 0, small(), &["first"]);
    let q = LogQuery {
        previous: true,
        ..Default::default()
    };
    let err = read_all(root.path(), q.clone()).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"previous terminated container "c" in pod "p" not found"#
    );
    write_run(root.path(), 1, small(), &["second"]);
    assert_eq!(read_all(root.path(), q).await.unwrap(), "first\n");
    assert_eq!(
        read_all(root.path(), LogQuery::default()).await.unwrap(),
        "second\n"
    );
}

#[tokio::test]
async fn a_container_without_logs_is_waiting_to_start() {
    let root = tempfile::tempdir().unwrap();
    let err = read_all(root.path(), LogQuery::default())
        .await
        .unwrap_err();
    assert_eq!(
        err.kind(),
        crate::container_logs::error::LogErrorKind::NotStarted
    );
    assert_eq!(
        err.to_string(),
        r#"container "c" in pod "p" is waiting to start: ContainerCreating"#
    );
}

/// The next chunk of `s`, within [`WAIT`].
async fn next<S: futures::Stream<Item = io::Result<Bytes>> + Unpin>(s: &mut S) -> Option<String> {
    let chunk = tokio::time::timeout(WAIT, s.next())
        .await
        .expect("a chunk in time")?;
    Some(String::from_utf8(chunk.unwrap().to_vec()).unwrap())
}

/// A follower of run 0 whose first line, `a`, is written and read; and the run's log.
async fn following(root: &Path, w: &LogWatch) -> (RunLog, BoxStream<'static, io::Result<Bytes>>) {
    let log = write_run(root, 0, small(), &["a"]);
    let q = LogQuery {
        follow: true,
        ..Default::default()
    };
    let mut s = read(root, &pod(), "c", &q, w).await.unwrap().boxed();
    assert_eq!(next(&mut s).await.as_deref(), Some("a\n"));
    (log, s)
}

#[tokio::test]
async fn follow_streams_lines_written_after_it_started_across_rotation() {
    let root = tempfile::tempdir().unwrap();
    let w = watch();
    let (mut log, mut s) = following(root.path(), &w).await;
    let mut got = String::new();
    for (i, line) in ["b", "c", "d", "e"].iter().enumerate() {
        append(&mut log, &format!("2024-05-06T07:09:{i:02}Z"), line);
        while !got.ends_with(&format!("{line}\n")) {
            got += &next(&mut s).await.expect("more output");
        }
    }
    assert_eq!(got, "b\nc\nd\ne\n");
    let dir = pod().container_dir(root.path(), "c").unwrap();
    assert!(
        !files::list(&dir).unwrap()[&0].rotated.is_empty(),
        "the log rotated while it was followed"
    );
    append(&mut log, "2024-05-06T07:10:00Z", "last");
    log.mark_ended().unwrap();
    let mut rest = String::new();
    while let Some(chunk) = next(&mut s).await {
        rest += &chunk;
    }
    assert_eq!(rest, "last\n", "the stream ends after the run's last line");
}

#[tokio::test]
async fn follow_ends_when_the_next_run_starts() {
    let root = tempfile::tempdir().unwrap();
    let w = watch();
    let (_log, mut s) = following(root.path(), &w).await;
    write_run(root.path(), 1, small(), &["next run"]);
    assert_eq!(next(&mut s).await, None);
}

#[tokio::test]
async fn previous_never_follows() {
    let root = tempfile::tempdir().unwrap();
    write_run(root.path(), 0, small(), &["old"]);
    write_run(root.path(), 1, small(), &["new"]);
    let q = LogQuery {
        follow: true,
        previous: true,
        ..Default::default()
    };
    assert_eq!(read_all(root.path(), q).await.unwrap(), "old\n");
}

#[tokio::test]
async fn follow_ends_when_the_pods_logs_are_removed() {
    let root = tempfile::tempdir().unwrap();
    let w = watch();
    let (_log, mut s) = following(root.path(), &w).await;
    files::remove_pod_logs(root.path(), &pod()).unwrap();
    assert_eq!(next(&mut s).await, None);
}

/// The next chunk of `s`, read by a task that has begun waiting for it when this returns:
/// the paused clock moves on only once every task waits.
async fn next_later<S>(mut s: S) -> tokio::task::JoinHandle<(Option<String>, S)>
where
    S: futures::Stream<Item = io::Result<Bytes>> + Unpin + Send + 'static,
{
    let reading = tokio::spawn(async move {
        let chunk = next(&mut s).await;
        (chunk, s)
    });
    tokio::time::sleep(Duration::from_millis(10)).await;
    reading
}

#[tokio::test(start_paused = true)]
async fn a_waiting_follower_wakes_on_each_append_the_rotation_and_the_runs_end() {
    let root = tempfile::tempdir().unwrap();
    // The OS's watch, and no fallback within the test: every wake is a notification.
    let w = watch();
    let (mut log, mut s) = following(root.path(), &w).await;
    for (i, line) in ["b", "c", "d"].iter().enumerate() {
        let reading = next_later(s).await;
        append(&mut log, &format!("2024-05-06T07:09:{i:02}Z"), line);
        let (chunk, back) = reading.await.unwrap();
        s = back;
        assert_eq!(chunk, Some(format!("{line}\n")));
    }
    let dir = pod().container_dir(root.path(), "c").unwrap();
    assert!(
        !files::list(&dir).unwrap()[&0].rotated.is_empty(),
        "the log rotated while it was followed"
    );
    let ending = next_later(s).await;
    log.mark_ended().unwrap();
    assert_eq!(ending.await.unwrap().0, None);
}

#[tokio::test(start_paused = true)]
async fn a_follower_reads_at_the_fallback_what_no_notification_announced() {
    let root = tempfile::tempdir().unwrap();
    let w = LogWatch::manual(Periods {
        fallback: Duration::from_secs(2),
        poll: Duration::from_millis(25),
    });
    let (mut log, s) = following(root.path(), &w).await;
    let reading = next_later(s).await;
    let t0 = tokio::time::Instant::now();
    append(&mut log, "2024-05-06T07:09:00Z", "b");
    let (chunk, s) = reading.await.unwrap();
    assert_eq!(chunk.as_deref(), Some("b\n"));
    assert!(t0.elapsed() <= Duration::from_secs(2), "{:?}", t0.elapsed());
    let reading = next_later(s).await;
    append(&mut log, "2024-05-06T07:09:01Z", "c");
    w.fire();
    let t1 = tokio::time::Instant::now();
    assert_eq!(reading.await.unwrap().0.as_deref(), Some("c\n"));
    assert!(
        t1.elapsed() < Duration::from_secs(1),
        "woken: {:?}",
        t1.elapsed()
    );
}
