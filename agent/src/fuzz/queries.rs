//! Fuzz targets for the query strings and stream headers of the kubelet port's requests:
//! exec and attach options ([`crate::kubelet_api::stream::remotecommand::protocol`]), `containerLogs`
//! ([`crate::kubelet_api::logs::query`]) and port-forward's ports and stream heads
//! ([`crate::kubelet_api::stream::portforward`]).

use k8s_openapi::jiff::Timestamp;

use crate::kubelet_api::{
    logs::query,
    stream::{
        portforward::{spdy as portforward, websocket as ws_forward},
        remotecommand::protocol,
        websocket::frame as ws_frame,
    },
};
use spdy::zlib;
use tart::fuzz::{COPY_BOUND, Target, strings};

/// Query separators and escapes the mutator splices in.
const QUERY: &[&str] = &["&", "=", "%", "%2C", "%00", "+", ","];

pub(super) fn targets() -> Vec<Target> {
    vec![
        Target {
            name: "exec_query",
            run: exec_query,
            seeds: exec_seeds,
            tokens: &[
                "command=", "input=1", "output=1", "error=1", "tty=1", "&", "=", "%",
            ],
            max_alloc: COPY_BOUND,
        },
        Target {
            name: "log_query",
            run: log_query,
            seeds: log_seeds,
            tokens: &[
                "follow=",
                "tailLines=",
                "sinceSeconds=",
                "sinceTime=",
                "limitBytes=",
                "timestamps=",
                "previous=",
                "9223372036854775807",
                "-1",
                "T10%3A00%3A00Z",
                "&",
            ],
            max_alloc: COPY_BOUND,
        },
        Target {
            name: "port_forward",
            run: port_forward,
            seeds: forward_seeds,
            tokens: QUERY,
            max_alloc: COPY_BOUND,
        },
    ]
}

/// Exec and attach options: a query that is accepted asks for a stream (and exec for a
/// command), and a TTY never has a separate stderr.
fn exec_query(data: &[u8]) {
    let q = String::from_utf8_lossy(data);
    if let Ok(o) = protocol::attach_options(&q) {
        assert!(o.stdin || o.stdout || o.stderr, "{q:?}");
        assert!(!(o.tty && o.stderr), "{q:?}");
    }
    if let Ok(o) = protocol::exec_options(&q) {
        assert!(!o.command.is_empty(), "{q:?}");
    }
}

/// `containerLogs`: what is accepted keeps kubelet's rules, and its time bound computes.
fn log_query(data: &[u8]) {
    let q = String::from_utf8_lossy(data);
    match query::parse(&q) {
        Ok(l) => {
            assert!(l.limit_bytes.is_none_or(|b| b >= 1), "{q:?}");
            assert!(l.since_seconds.is_none_or(|s| s >= 1), "{q:?}");
            assert!(l.since_seconds.is_none() || l.since_time.is_none(), "{q:?}");
            let now = Timestamp::from_second(1_764_000_000).unwrap_or(Timestamp::UNIX_EPOCH);
            if let Some(since) = l.since(now) {
                assert!(l.since_time.is_some() || since <= now, "{q:?}");
            }
        }
        Err(e) => assert!(matches!(e.status(), 400 | 422), "{q:?}"),
    }
}

/// Port-forward: the WebSocket query's ports, and a SPDY stream's head read from the same
/// bytes as a header block; a port is never 0.
fn port_forward(data: &[u8]) {
    let query = String::from_utf8_lossy(data);
    for p in ws_frame::FORWARD_SERVED {
        if let Ok(ports) = ws_forward::ports(&query, p) {
            assert!(!ports.is_empty(), "no ports");
            let last_channel = 2 * ports.len() - 1;
            assert!(
                last_channel <= usize::from(p.max_channel()),
                "{} ports",
                ports.len()
            );
            assert!(!ports.contains(&0));
        }
    }
    let Some((id, block)) = data.split_first_chunk::<4>() else {
        return;
    };
    if let Ok(headers) = zlib::parse(block)
        && let Ok(head) = portforward::head(&headers, u32::from_be_bytes(*id))
    {
        assert_ne!(head.port, 0);
    }
}

fn exec_seeds() -> Vec<Vec<u8>> {
    strings(&[
        "command=sh&command=-c&command=echo+hi&input=1&output=1&error=1",
        "command=ls&output=1&tty=1",
        "input=1&output=1&error=1&tty=1",
        "command=%2Fbin%2Fsh&command=%00&output=1",
        "command=x",
    ])
}

fn log_seeds() -> Vec<Vec<u8>> {
    strings(&[
        "follow=true&previous=true&timestamps=true&sinceSeconds=3600&tailLines=5&limitBytes=100",
        "sinceTime=2026-11-23T10%3A00%3A00Z",
        "tailLines=-1",
        "sinceSeconds=5&sinceTime=2026-11-23T10:00:00Z",
        "sinceSeconds=9223372036854775807",
        "follow=FALSE&follow=true",
        "",
    ])
}

fn forward_seeds() -> Vec<Vec<u8>> {
    let head = |id: u32, h: &[(&str, &str)]| [&id.to_be_bytes()[..], &zlib::serialize(h)].concat();
    let mut seeds = strings(&["port=8080", "port=80,443&port=22", "port=0", "port=", "x=1"]);
    seeds.push(head(
        1,
        &[
            ("port", "8080"),
            ("requestid", "0"),
            ("streamtype", "error"),
        ],
    ));
    seeds.push(head(3, &[("port", "8080"), ("streamtype", "data")]));
    seeds.push(head(5, &[("port", "65536"), ("streamtype", "data")]));
    seeds
}
