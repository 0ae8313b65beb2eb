use tokio::time::timeout;

use super::*;
use crate::testing::{Client, T, stream_data};

const HOUR: Duration = Duration::from_secs(3600);

fn is_reply(f: Option<Frame>, id: u32) -> bool {
    matches!(f, Some(Frame::SynReply { stream_id, flags: 0, .. }) if stream_id == id)
}

#[tokio::test]
async fn client_streams_are_accepted_at_once_and_their_data_ends_at_fin() {
    let (mut c, io) = Client::pair();
    let mut conn = Conn::start(io, HOUR);
    let id = c.open("stdin").await;
    assert!(
        is_reply(c.next().await, id),
        "replied before the stream is taken"
    );
    let mut s = timeout(T, conn.accept()).await.unwrap().unwrap();
    assert_eq!(s.id, id);
    assert_eq!(s.headers, vec![("streamtype".into(), "stdin".into())]);
    c.data(id, b"abc", false).await;
    c.data(id, b"", true).await;
    assert_eq!(
        timeout(T, s.data.recv()).await.unwrap().as_deref(),
        Some(&b"abc"[..])
    );
    assert_eq!(
        timeout(T, s.data.recv()).await.unwrap(),
        None,
        "FIN is the end"
    );
}

#[tokio::test]
async fn odd_pings_are_echoed_and_settings_and_window_updates_ignored() {
    let (mut c, io) = Client::pair();
    let _conn = Conn::start(io, HOUR);
    c.send(Frame::Settings).await;
    c.send(Frame::WindowUpdate {
        stream_id: 0,
        delta: 1,
    })
    .await;
    c.send(Frame::Ping(2)).await;
    c.send(Frame::Ping(5)).await;
    assert_eq!(c.next().await, Some(Frame::Ping(5)));
}

#[tokio::test]
async fn a_stream_id_that_does_not_increase_is_reset() {
    let (mut c, io) = Client::pair();
    let _conn = Conn::start(io, HOUR);
    c.set_next_id(5);
    let five = c.open("error").await;
    assert!(is_reply(c.next().await, five));
    c.set_next_id(1);
    let one = c.open("stdout").await;
    assert_eq!(
        c.next().await,
        Some(Frame::RstStream {
            stream_id: one,
            status: RstStatus::ProtocolError
        })
    );
}

#[tokio::test]
async fn output_is_sent_in_32k_frames_without_waiting_for_a_window() {
    let (mut c, io) = Client::pair();
    let mut conn = Conn::start(io, HOUR);
    let id = c.open("stdout").await;
    assert!(is_reply(c.next().await, id));
    let s = timeout(T, conn.accept()).await.unwrap().unwrap();
    let tx = conn.tx(s.id);
    let big = vec![7u8; 200 * 1024];
    let writer = tokio::spawn(async move {
        tx.write(&big).await.unwrap();
        tx.finish().await.unwrap();
    });
    let mut got = 0;
    loop {
        match c.next().await.unwrap() {
            Frame::Data { flags, data, .. } => {
                assert!(data.len() <= MAX_DATA);
                got += data.len();
                if flags & FLAG_FIN != 0 {
                    break;
                }
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(
        got,
        200 * 1024,
        "more than a 64 KiB window, with no WINDOW_UPDATE"
    );
    writer.await.unwrap();
}

#[tokio::test]
async fn the_connection_closes_when_the_client_hangs_up_or_says_goaway() {
    let (c, io) = Client::pair();
    let conn = Conn::start(io, HOUR);
    drop(c);
    timeout(T, conn.closed()).await.unwrap();

    let (mut c, io) = Client::pair();
    let conn = Conn::start(io, HOUR);
    c.send(Frame::GoAway {
        last_good: 0,
        status: 0,
    })
    .await;
    timeout(T, conn.closed()).await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn an_idle_connection_is_closed_after_the_idle_timeout() {
    let (mut c, io) = Client::pair();
    let conn = Conn::start(io, Duration::from_secs(60));
    tokio::time::sleep(Duration::from_secs(50)).await;
    c.send(Frame::Ping(1)).await;
    tokio::time::sleep(Duration::from_secs(50)).await;
    let closed = conn.closed();
    tokio::pin!(closed);
    assert!(
        futures::poll!(&mut closed).is_pending(),
        "a ping 50 s ago keeps it open"
    );
    timeout(Duration::from_secs(15), closed).await.unwrap();
}

#[tokio::test]
async fn shutdown_says_goaway_with_the_last_stream_and_closes_the_socket() {
    let (mut c, io) = Client::pair();
    let mut conn = Conn::start(io, HOUR);
    let a = c.open("error").await;
    let b = c.open("stdout").await;
    for id in [a, b] {
        assert!(is_reply(c.next().await, id));
        timeout(T, conn.accept()).await.unwrap().unwrap();
    }
    conn.tx(b).write(b"bye").await.unwrap();
    let client = tokio::spawn(async move {
        let frames = c.until_goaway().await;
        drop(c);
        frames
    });
    timeout(T, conn.shutdown(T)).await.unwrap();
    let frames = client.await.unwrap();
    assert_eq!(stream_data(&frames, b), (b"bye".to_vec(), false));
    assert_eq!(
        frames.last(),
        Some(&Frame::GoAway {
            last_good: 3,
            status: 0
        })
    );
}
