//! Sessions driven by a scripted client, with the command standing in as a scripted session
//! (no API server, no process).

use std::{
    sync::{Arc, atomic::Ordering},
    time::Duration,
};

use futures::FutureExt;
use tart::WindowSize;
use tokio::time::timeout;

use super::*;
use crate::kubelet_api::stream::{
    fixtures::{Client, Seen, T, scripted, stream_data},
    metrics::SessionClock,
};
use spdy::frame::Frame;

fn opts(q: &str) -> ExecOptions {
    protocol::exec_options(q).unwrap()
}

async fn open_replied(c: &mut Client, kinds: &[&str]) -> Vec<u32> {
    let mut ids = vec![];
    for k in kinds {
        let id = c.open(k).await;
        assert!(
            matches!(c.next().await, Some(Frame::SynReply { stream_id, .. }) if stream_id == id)
        );
        ids.push(id);
    }
    ids
}

#[tokio::test]
async fn output_then_the_exit_code_on_the_error_stream_then_goaway() {
    let (mut c, io) = Client::pair();
    let seen = Arc::new(Seen::default());
    let session = tokio::spawn(serve(
        Conn::start(io, IDLE),
        Protocol::V4,
        opts("command=sh&command=-c&command=echo+hi%3B+exit+3&output=1&error=1"),
        scripted("hi\n", "oops\n", None, 3, seen.clone()),
        Timeouts::default(),
        SessionClock::unobserved(),
    ));
    let ids = open_replied(&mut c, &["error", "stdout", "stderr"]).await;
    let frames = c.until_goaway().await;
    drop(c);
    assert_eq!(stream_data(&frames, ids[1]), (b"hi\n".to_vec(), true));
    assert_eq!(stream_data(&frames, ids[2]), (b"oops\n".to_vec(), true));
    let (status, fin) = stream_data(&frames, ids[0]);
    assert!(fin);
    let v: serde_json::Value = serde_json::from_slice(&status).unwrap();
    assert_eq!(v["reason"], "NonZeroExitCode");
    assert_eq!(v["details"]["causes"][0]["message"], "3");
    let pos = |id: u32| {
        frames
            .iter()
            .rposition(|f| matches!(f, Frame::Data { stream_id, .. } if *stream_id == id))
            .unwrap()
    };
    assert!(
        pos(ids[1]) < pos(ids[0]) && pos(ids[2]) < pos(ids[0]),
        "output ends before the status"
    );
    assert!(matches!(frames.last(), Some(Frame::GoAway { .. })));
    assert_eq!(timeout(T, session).await.unwrap().unwrap(), End::Exited(3));
}

#[tokio::test]
async fn stdin_reaches_the_command_and_its_fin_is_eof() {
    let (mut c, io) = Client::pair();
    let seen = Arc::new(Seen::default());
    let (exit_tx, exit_rx) = tokio::sync::oneshot::channel();
    let session = tokio::spawn(serve(
        Conn::start(io, IDLE),
        Protocol::V4,
        opts("command=cat&input=1&output=1"),
        scripted("", "", Some(exit_rx), 0, seen.clone()),
        Timeouts::default(),
        SessionClock::unobserved(),
    ));
    let ids = open_replied(&mut c, &["error", "stdin", "stdout"]).await;
    c.data(ids[1], b"hello ", false).await;
    c.data(ids[1], b"world", true).await;
    let deadline = tokio::time::Instant::now() + T;
    while seen.stdin.lock().unwrap().as_slice() != b"hello world" {
        assert!(tokio::time::Instant::now() < deadline, "stdin never closed");
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    exit_tx.send(0).unwrap();
    let frames = c.until_goaway().await;
    assert_eq!(
        stream_data(&frames, ids[0]).0,
        br#"{"metadata":{},"status":"Success"}"#.to_vec()
    );
    drop(c);
    assert_eq!(timeout(T, session).await.unwrap().unwrap(), End::Exited(0));
}

#[tokio::test]
async fn a_client_that_goes_away_mid_command_kills_it() {
    let (mut c, io) = Client::pair();
    let seen = Arc::new(Seen::default());
    let (_never, exit_rx) = tokio::sync::oneshot::channel();
    let session = tokio::spawn(serve(
        Conn::start(io, IDLE),
        Protocol::V4,
        opts("command=sleep&command=1000&output=1"),
        scripted("", "", Some(exit_rx), 0, seen.clone()),
        Timeouts::default(),
        SessionClock::unobserved(),
    ));
    open_replied(&mut c, &["error", "stdout"]).await;
    assert!(!seen.killed.load(Ordering::SeqCst));
    drop(c);
    assert_eq!(timeout(T, session).await.unwrap().unwrap(), End::ClientGone);
    assert!(seen.killed.load(Ordering::SeqCst), "the command was killed");
}

#[tokio::test]
async fn terminal_sizes_are_applied_in_order() {
    let (mut c, io) = Client::pair();
    let seen = Arc::new(Seen::default());
    let (exit_tx, exit_rx) = tokio::sync::oneshot::channel();
    let session = tokio::spawn(serve(
        Conn::start(io, IDLE),
        Protocol::V4,
        opts("command=sh&input=1&output=1&tty=1"),
        scripted("$ ", "", Some(exit_rx), 0, seen.clone()),
        Timeouts::default(),
        SessionClock::unobserved(),
    ));
    let ids = open_replied(&mut c, &["error", "stdin", "stdout", "resize"]).await;
    c.data(ids[3], b"{\"Width\":80,\"Height\":24}\n{\"Width\":1", false)
        .await;
    c.data(ids[3], b"20,\"Height\":40}\n", false).await;
    let want = vec![
        WindowSize { cols: 80, rows: 24 },
        WindowSize {
            cols: 120,
            rows: 40,
        },
    ];
    let deadline = tokio::time::Instant::now() + T;
    while *seen.sizes.lock().unwrap() != want {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{:?}",
            seen.sizes.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    exit_tx.send(0).unwrap();
    c.until_goaway().await;
    drop(c);
    assert_eq!(timeout(T, session).await.unwrap().unwrap(), End::Exited(0));
}

#[tokio::test(start_paused = true)]
async fn a_client_that_never_opens_its_streams_is_dropped_after_the_creation_timeout() {
    let (mut c, io) = Client::pair();
    let seen = Arc::new(Seen::default());
    let session = tokio::spawn(serve(
        Conn::start(io, IDLE),
        Protocol::V4,
        opts("command=true&output=1"),
        scripted("", "", None, 0, seen),
        Timeouts::default(),
        SessionClock::unobserved(),
    ));
    open_replied(&mut c, &["error"]).await;
    let end = timeout(STREAM_CREATION + Duration::from_secs(1), session).await;
    assert_eq!(end.unwrap().unwrap(), End::StreamsTimedOut);
}

#[tokio::test]
async fn a_command_that_cannot_start_reports_an_internal_error() {
    let (mut c, io) = Client::pair();
    let start: Starter = Box::new(|_| {
        async {
            Err(tart::Error::new(
                tart::Op::Exec,
                tart::ErrorKind::Spawn,
                None,
                "no tart here",
            ))
        }
        .boxed()
    });
    let session = tokio::spawn(serve(
        Conn::start(io, IDLE),
        Protocol::V4,
        opts("command=true&output=1"),
        start,
        Timeouts::default(),
        SessionClock::unobserved(),
    ));
    let ids = open_replied(&mut c, &["error", "stdout"]).await;
    let frames = c.until_goaway().await;
    drop(c);
    let v: serde_json::Value = serde_json::from_slice(&stream_data(&frames, ids[0]).0).unwrap();
    assert_eq!(v["reason"], "InternalError");
    assert!(
        v["message"].as_str().unwrap().contains("no tart here"),
        "{v}"
    );
    assert_eq!(
        timeout(T, session).await.unwrap().unwrap(),
        End::StartFailed
    );
}

#[test]
fn each_end_has_its_metric_outcome() {
    for (end, want) in [
        (End::Exited(0), "ok"),
        (End::Exited(3), "nonzero_exit"),
        (End::Exited(-1), "nonzero_exit"),
        (End::StartFailed, "error"),
        (End::ClientGone, "client_gone"),
        (End::StreamsTimedOut, "client_gone"),
    ] {
        assert_eq!(end.outcome().as_str(), want, "{end:?}");
    }
}
