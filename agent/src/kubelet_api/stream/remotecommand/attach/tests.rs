//! Attach sessions driven by a scripted client over a scripted output stream, and the
//! refusals of stdin.

use std::io;

use tokio::time::timeout;

use super::*;
use crate::kubelet_api::stream::{
    fixtures::{Client, T, stream_data},
    remotecommand::{
        protocol::{self, Protocol},
        session::IDLE,
    },
};
use spdy::{conn::Conn, frame::Frame};

fn opts(q: &str) -> ExecOptions {
    protocol::attach_options(q).unwrap()
}

fn pod(stdin: Option<bool>) -> Pod {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": "p1", "namespace": "ns"},
        "spec": {"containers": [{"name": "c", "image": "img", "stdin": stdin}]}
    }))
    .unwrap()
}

#[test]
fn stdin_is_refused_without_stdin_true_or_with_a_terminal_and_output_is_served() {
    // (query, the container's `stdin`, what the refusal says; "" = served)
    let table: [(&str, Option<bool>, &str); 9] = [
        ("output=1&error=1", None, ""),
        ("output=1&error=1", Some(true), ""),
        ("output=1&tty=1", Some(true), ""),
        ("input=1&output=1", Some(true), ""),
        ("input=1&output=1", None, "stdin is not enabled"),
        (
            "input=1&output=1&tty=1",
            Some(false),
            "stdin is not enabled",
        ),
        ("input=1&output=1&tty=1", Some(true), "with a terminal"),
        ("input=1&tty=1", Some(true), "kubectl exec -it"),
        ("input=1&output=1&error=1", Some(true), ""),
    ];
    for (query, stdin, says) in table {
        let got = refusal(&pod(stdin), "c", &opts(query));
        match got {
            None => assert_eq!(says, "", "{query} stdin={stdin:?} served"),
            Some(m) => assert!(
                !says.is_empty() && m.contains(says),
                "{query} stdin={stdin:?}: {m}"
            ),
        }
    }
}

#[test]
fn an_attach_query_needs_a_stream_but_no_command() {
    assert_eq!(
        protocol::attach_options("tty=1").err(),
        Some(protocol::NO_STREAMS)
    );
    let o = opts("output=1&error=1&tty=1");
    assert!(o.stdout && !o.stderr && o.command.is_empty());
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

fn chunks(items: Vec<io::Result<&'static str>>) -> LogStream {
    Box::pin(futures::stream::iter(
        items
            .into_iter()
            .map(|r| r.map(|s| Bytes::from_static(s.as_bytes()))),
    ))
}

#[tokio::test]
async fn output_until_the_run_ends_then_success_and_goaway() {
    let (mut c, io) = Client::pair();
    let session = tokio::spawn(serve(
        Conn::start(io, IDLE),
        Protocol::V4,
        opts("output=1&error=1"),
        chunks(vec![Ok("one\n"), Ok("two\n")]),
        Timeouts::default(),
    ));
    let ids = open_replied(&mut c, &["error", "stdout", "stderr"]).await;
    let frames = c.until_goaway().await;
    drop(c);
    assert_eq!(stream_data(&frames, ids[1]), (b"one\ntwo\n".to_vec(), true));
    assert_eq!(stream_data(&frames, ids[2]), (Vec::new(), true));
    let (status, fin) = stream_data(&frames, ids[0]);
    assert!(fin);
    let v: serde_json::Value = serde_json::from_slice(&status).unwrap();
    assert_eq!(v["status"], "Success");
    assert_eq!(
        timeout(T, session).await.unwrap().unwrap(),
        AttachEnd::OutputEnded
    );
}

#[tokio::test]
async fn a_failed_read_is_reported_as_a_failure() {
    let (mut c, io) = Client::pair();
    let session = tokio::spawn(serve(
        Conn::start(io, IDLE),
        Protocol::V4,
        opts("output=1&tty=1"),
        chunks(vec![Ok("one\n"), Err(io::Error::other("disk gone"))]),
        Timeouts::default(),
    ));
    let ids = open_replied(&mut c, &["error", "stdout", "resize"]).await;
    c.data(ids[2], b"{\"Width\":80,\"Height\":24}\n", false)
        .await;
    let frames = c.until_goaway().await;
    drop(c);
    assert_eq!(stream_data(&frames, ids[1]), (b"one\n".to_vec(), true));
    let v: serde_json::Value = serde_json::from_slice(&stream_data(&frames, ids[0]).0).unwrap();
    assert_eq!(v["status"], "Failure");
    assert_eq!(
        timeout(T, session).await.unwrap().unwrap(),
        AttachEnd::ReadFailed
    );
}

#[tokio::test]
async fn the_client_going_away_ends_a_session_whose_job_still_runs() {
    let (mut c, io) = Client::pair();
    let session = tokio::spawn(serve(
        Conn::start(io, IDLE),
        Protocol::V4,
        opts("output=1"),
        Box::pin(futures::stream::pending()),
        Timeouts::default(),
    ));
    open_replied(&mut c, &["error", "stdout"]).await;
    drop(c);
    assert_eq!(
        timeout(T, session).await.unwrap().unwrap(),
        AttachEnd::ClientGone
    );
}

#[tokio::test]
async fn stdin_goes_to_the_relay_which_ends_with_the_session() {
    use std::sync::{Arc, atomic::Ordering};

    use crate::kubelet_api::stream::{
        fixtures::{Seen, eventually, scripted},
        remotecommand,
    };

    let (mut c, io) = Client::pair();
    let seen = Arc::new(Seen::default());
    let relay = scripted("", "", None, 0, seen.clone());
    let options = opts("input=1&output=1&error=1");
    let session = tokio::spawn(async move {
        let t = Timeouts::default();
        let opened = remotecommand::spdy::open(Conn::start(io, IDLE), Protocol::V4, &options, t)
            .await
            .unwrap_or_else(|_| panic!("streams"));
        run(opened, Box::pin(futures::stream::pending()), Some(relay), t).await
    });
    let ids = open_replied(&mut c, &["error", "stdin", "stdout", "stderr"]).await;
    c.data(ids[1], b"hello\n", true).await;
    let got = eventually(|| seen.stdin.lock().unwrap().as_slice() == b"hello\n").await;
    assert!(got, "{:?}", seen.stdin.lock().unwrap());
    assert!(!seen.killed.load(Ordering::SeqCst), "the relay runs");
    drop(c);
    assert_eq!(
        timeout(T, session).await.unwrap().unwrap(),
        AttachEnd::ClientGone
    );
    assert!(
        seen.killed.load(Ordering::SeqCst),
        "the relay was killed with the session"
    );
}
