use tokio::net::TcpListener;

use super::*;
use crate::kubelet_api::stream::fixtures::{Client, T, stream_data};
use spdy::frame::Frame;

fn headers(h: &[(&str, &str)]) -> zlib::Headers {
    h.iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

#[test]
fn stream_heads_are_read_like_kubelets() {
    let h = headers(&[("streamtype", "data"), ("port", "8080"), ("requestid", "3")]);
    assert_eq!(
        head(&h, 9),
        Ok(StreamHead {
            error: false,
            port: 8080,
            request: "3".into()
        })
    );
    let old = headers(&[("streamtype", "data"), ("port", "80")]);
    assert_eq!(
        head(&old, 7).unwrap().request,
        "5",
        "data id - 2 without requestid"
    );
    let old = headers(&[("streamtype", "error"), ("port", "80")]);
    assert_eq!(head(&old, 5).unwrap().request, "5");
    for bad in [
        headers(&[("streamtype", "data")]),
        headers(&[("streamtype", "data"), ("port", "0")]),
        headers(&[("streamtype", "data"), ("port", "70000")]),
        headers(&[("streamtype", "stdin"), ("port", "80")]),
    ] {
        assert!(head(&bad, 1).is_err(), "{bad:?}");
    }
}

async fn replied(c: &mut Client, h: &[(&str, &str)]) -> u32 {
    let id = c.open_with(h, 0).await;
    assert!(matches!(c.next().await, Some(Frame::SynReply { stream_id, .. }) if stream_id == id));
    id
}

#[tokio::test]
async fn a_pair_forwards_bytes_both_ways_with_half_closes() {
    let guest = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = guest.local_addr().unwrap().port().to_string();
    let server = tokio::spawn(async move {
        let (mut s, _) = guest.accept().await.unwrap();
        let mut got = Vec::new();
        s.read_to_end(&mut got).await.unwrap();
        s.write_all(b"echo:").await.unwrap();
        s.write_all(&got).await.unwrap();
    });
    let (mut c, io) = Client::pair();
    let session = tokio::spawn(serve(
        Conn::start(io, Duration::from_secs(3600)),
        "127.0.0.1".parse().unwrap(),
        "p, uid u".into(),
    ));
    let p = port.as_str();
    let e = replied(
        &mut c,
        &[("streamtype", "error"), ("port", p), ("requestid", "0")],
    )
    .await;
    c.data(e, b"", true).await;
    let d = replied(
        &mut c,
        &[("streamtype", "data"), ("port", p), ("requestid", "0")],
    )
    .await;
    c.data(d, b"ping", true).await;
    let mut frames = Vec::new();
    while !matches!(stream_data(&frames, e), (_, true)) {
        frames.push(c.next().await.expect("frames until the error stream ends"));
    }
    assert_eq!(stream_data(&frames, d), (b"echo:ping".to_vec(), true));
    assert_eq!(stream_data(&frames, e), (vec![], true), "no error");
    server.await.unwrap();
    drop(c);
    timeout(T, session).await.unwrap().unwrap();
}

#[tokio::test]
async fn a_closed_port_is_one_line_on_the_error_stream_and_a_reset() {
    let closed = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = closed.local_addr().unwrap().port().to_string();
    drop(closed);
    let (mut c, io) = Client::pair();
    let _session = tokio::spawn(serve(
        Conn::start(io, Duration::from_secs(3600)),
        "127.0.0.1".parse().unwrap(),
        "p, uid u".into(),
    ));
    let p = port.as_str();
    let e = replied(
        &mut c,
        &[("streamtype", "error"), ("port", p), ("requestid", "0")],
    )
    .await;
    let d = replied(
        &mut c,
        &[("streamtype", "data"), ("port", p), ("requestid", "0")],
    )
    .await;
    let mut frames = Vec::new();
    while !frames
        .iter()
        .any(|f| matches!(f, Frame::RstStream { stream_id, .. } if *stream_id == d))
    {
        frames.push(c.next().await.expect("a reset of the data stream"));
    }
    let (msg, _) = stream_data(&frames, e);
    let msg = String::from_utf8(msg).unwrap();
    assert!(
        msg.starts_with(&format!("error forwarding port {port} to pod p, uid u: ")),
        "{msg}"
    );
}

#[tokio::test]
async fn a_stream_without_a_port_is_reset() {
    let (mut c, io) = Client::pair();
    let _session = tokio::spawn(serve(
        Conn::start(io, Duration::from_secs(3600)),
        "127.0.0.1".parse().unwrap(),
        "p".into(),
    ));
    let id = replied(&mut c, &[("streamtype", "data")]).await;
    assert_eq!(
        c.next().await,
        Some(Frame::RstStream {
            stream_id: id,
            status: RstStatus::ProtocolError
        })
    );
}
