//! A bounded load generator for the kubelet port (tests/tests/e2e/kubelet_abuse.rs,
//! docs/performance.md "The kubelet port under abuse"), loopback only: connections held open
//! without a TLS handshake, TLS connections that never send a request, request headers sent
//! one line a second (slowloris), floods of requests refused with 401 (no credentials) and
//! 403 (a token without rights), and authorized followed logs and exec sessions held open.
//!
//! Every task reconnects when the agent closes its connection, no faster than the plan's pace,
//! and everything stops when [`run`]'s deadline passes or its stop signal turns true: the
//! generator never runs on by itself.

use std::{
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed},
    },
    time::Duration,
};

use tokio::{
    io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader},
    net::TcpStream,
    sync::watch,
    task::JoinSet,
};
use tokio_rustls::{TlsConnector, client::TlsStream, rustls::pki_types::ServerName};

pub mod tls;

/// Where the load goes and how to speak TLS to it.
#[derive(Clone)]
pub struct Target {
    /// The agent's kubelet port (loopback).
    pub addr: SocketAddr,
    /// TLS without a client certificate.
    pub anonymous: TlsConnector,
    /// TLS with a client certificate the agent authorizes (the API server's).
    pub authorized: TlsConnector,
}

/// How much of each kind of abuse.
#[derive(Debug, Clone)]
pub struct Plan {
    /// TCP connections that never start TLS.
    pub idle_tcp: usize,
    /// TLS connections that never send a request.
    pub idle_tls: usize,
    /// Connections sending their request headers one line a second.
    pub slow_headers: usize,
    /// Connections sending refused requests back to back.
    pub flooders: usize,
    /// A bearer token the agent knows but does not authorize (403).
    pub forbidden_token: String,
    /// Paths of followed logs to hold open (`...?follow=true`), authorized.
    pub follows: Vec<String>,
    /// Paths of execs to hold open (a WebSocket upgrade), authorized.
    pub execs: Vec<String>,
    /// The shortest time between two connections of one task.
    pub pace: Duration,
}

/// What happened, counted as it happens.
#[derive(Debug, Default)]
pub struct Counters {
    /// Abusive connections open now, and the most at once.
    pub open: AtomicUsize,
    pub peak_open: AtomicUsize,
    /// Abusive connections the agent closed.
    pub closed_by_agent: AtomicU64,
    /// Flood answers by status.
    pub unauthorized: AtomicU64,
    pub forbidden: AtomicU64,
    pub other_status: AtomicU64,
    /// Authorized sessions open now, and the most at once.
    pub sessions_open: AtomicUsize,
    pub peak_sessions: AtomicUsize,
    /// Authorized sessions refused (`429`) or that did not open.
    pub sessions_refused: AtomicU64,
}

/// Counts one open connection while it lives.
struct Held<'a>(&'a AtomicUsize);

impl<'a> Held<'a> {
    fn new(open: &'a AtomicUsize, peak: &AtomicUsize) -> Self {
        let now = open.fetch_add(1, Relaxed) + 1;
        peak.fetch_max(now, Relaxed);
        Self(open)
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Relaxed);
    }
}

/// Runs `plan` against `target` until `stop` turns true or `deadline` passes.
pub async fn run(
    target: Target,
    plan: Plan,
    counters: Arc<Counters>,
    stop: watch::Receiver<bool>,
    deadline: Duration,
) {
    let mut set = JoinSet::new();
    let mut spawn = |kind: Kind| {
        let (t, p, c, mut s) = (target.clone(), plan.clone(), counters.clone(), stop.clone());
        set.spawn(async move {
            let mut pace = tokio::time::interval(p.pace);
            loop {
                tokio::select! {
                    _ = pace.tick() => {}
                    _ = s.wait_for(|s| *s) => return,
                }
                tokio::select! {
                    () = round(&t, &p, &c, &kind) => {}
                    _ = s.wait_for(|s| *s) => return,
                }
            }
        });
    };
    for _ in 0..plan.idle_tcp {
        spawn(Kind::IdleTcp);
    }
    for _ in 0..plan.idle_tls {
        spawn(Kind::IdleTls);
    }
    for _ in 0..plan.slow_headers {
        spawn(Kind::SlowHeaders);
    }
    for i in 0..plan.flooders {
        spawn(Kind::Flood(i % 2 == 0));
    }
    for path in &plan.follows {
        spawn(Kind::Session(format!(
            "GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n"
        )));
    }
    for path in &plan.execs {
        spawn(Kind::Session(format!(
            "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
             Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
             Sec-WebSocket-Protocol: v4.channel.k8s.io\r\n\r\n"
        )));
    }
    let _ = tokio::time::timeout(deadline, async {
        let mut stop = stop.clone();
        let _ = stop.wait_for(|s| *s).await;
    })
    .await;
    set.shutdown().await;
}

/// One kind of client.
enum Kind {
    IdleTcp,
    IdleTls,
    SlowHeaders,
    /// Refused requests; `true` without credentials (401), `false` with the forbidden token.
    Flood(bool),
    /// An authorized request whose answer is held open: this request text.
    Session(String),
}

/// One connection of `kind`, until the agent closes it.
async fn round(t: &Target, p: &Plan, c: &Counters, kind: &Kind) {
    let Ok(mut tcp) = TcpStream::connect(t.addr).await else {
        return;
    };
    if let Kind::Session(request) = kind {
        match session(t, tcp, request).await {
            Some(mut s) => {
                let _held = Held::new(&c.sessions_open, &c.peak_sessions);
                drain(&mut s).await;
            }
            None => {
                c.sessions_refused.fetch_add(1, Relaxed);
            }
        }
        return;
    }
    let _held = Held::new(&c.open, &c.peak_open);
    match kind {
        Kind::IdleTcp => drain(&mut tcp).await,
        Kind::IdleTls => {
            if let Some(mut s) = handshake(&t.anonymous, tcp).await {
                drain(&mut s).await;
            }
        }
        Kind::SlowHeaders => {
            if let Some(s) = handshake(&t.anonymous, tcp).await {
                slow_headers(s).await;
            }
        }
        Kind::Flood(anonymous) => {
            if let Some(s) = handshake(&t.anonymous, tcp).await {
                flood(s, (!anonymous).then_some(p.forbidden_token.as_str()), c).await;
            }
        }
        Kind::Session(_) => {}
    }
    c.closed_by_agent.fetch_add(1, Relaxed);
}

async fn handshake(connector: &TlsConnector, tcp: TcpStream) -> Option<TlsStream<TcpStream>> {
    let name = ServerName::try_from("127.0.0.1").ok()?;
    connector.connect(name, tcp).await.ok()
}

/// Reads until the other side closes.
async fn drain(io: &mut (impl AsyncRead + Unpin)) {
    let mut buf = vec![0u8; 16 << 10];
    while let Ok(1..) = io.read(&mut buf).await {}
}

/// A request line, then one header line a second, never the blank line that ends them.
async fn slow_headers(mut s: TlsStream<TcpStream>) {
    if s.write_all(b"GET /healthz HTTP/1.1\r\n").await.is_err() {
        return;
    }
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let mut buf = [0u8; 1024];
    loop {
        tokio::select! {
            _ = tick.tick() => {
                if s.write_all(b"X-Slow: 1\r\n").await.is_err() || s.flush().await.is_err() {
                    return;
                }
            }
            r = s.read(&mut buf) => if !matches!(r, Ok(1..)) { return },
        }
    }
}

/// Requests back to back on one kept-alive connection, each answer read whole and counted.
async fn flood(s: TlsStream<TcpStream>, token: Option<&str>, c: &Counters) {
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    let request = format!("GET /pods HTTP/1.1\r\nHost: localhost\r\n{auth}\r\n");
    let mut s = BufReader::new(s);
    loop {
        if s.get_mut().write_all(request.as_bytes()).await.is_err() {
            return;
        }
        let Some(status) = read_response(&mut s).await else {
            return;
        };
        let counter = match status {
            401 => &c.unauthorized,
            403 => &c.forbidden,
            _ => &c.other_status,
        };
        counter.fetch_add(1, Relaxed);
    }
}

/// Reads one response (headers, then a `Content-Length` body): its status.
async fn read_response(s: &mut (impl AsyncBufReadExt + Unpin)) -> Option<u16> {
    let (status, length) = read_head(s).await?;
    let mut body = vec![0u8; length];
    s.read_exact(&mut body).await.ok()?;
    Some(status)
}

/// Reads a response head: its status and `Content-Length` (0 without).
async fn read_head(s: &mut (impl AsyncBufReadExt + Unpin)) -> Option<(u16, usize)> {
    let mut line = String::new();
    s.read_line(&mut line).await.ok()?;
    let status = line.split(' ').nth(1)?.parse().ok()?;
    let mut length = 0;
    loop {
        line.clear();
        if s.read_line(&mut line).await.ok()? == 0 {
            return None;
        }
        let l = line.trim_end();
        if l.is_empty() {
            return Some((status, length));
        }
        if let Some((k, v)) = l.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse().ok()?;
        }
    }
}

/// Sends an authorized `request` and returns the connection when it answered 200 or 101.
async fn session(
    t: &Target,
    tcp: TcpStream,
    request: &str,
) -> Option<BufReader<TlsStream<TcpStream>>> {
    let mut s = handshake(&t.authorized, tcp).await?;
    s.write_all(request.as_bytes()).await.ok()?;
    let mut s = BufReader::new(s);
    let (status, _) = read_head(&mut s).await?;
    matches!(status, 200 | 101).then_some(s)
}
