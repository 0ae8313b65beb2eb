//! `tcpSocket` probes, and the dialing the `httpGet` handler shares: connect from the Mac to the
//! guest within the timeout, with Go's wording for what went wrong (kubelet's messages are Go
//! error texts, and users search for them).

use std::{io, net::SocketAddr, time::Duration};

use tokio::net::TcpStream;

use super::outcome::Outcome;

/// One attempt: a TCP connection to `host:port` opened within `timeout`, then closed.
pub(crate) async fn check(host: &str, port: u16, timeout: Duration) -> Outcome {
    match tokio::time::timeout(timeout, dial(host, port)).await {
        Ok(Ok(_stream)) => Outcome::Success,
        Ok(Err(e)) => Outcome::Failure(e.to_string()),
        Err(_) => Outcome::Failure(DialError::timed_out(host, port).to_string()),
    }
}

/// A failed dial, displayed as Go's `net.Dial` error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DialError(String);

impl std::fmt::Display for DialError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl DialError {
    /// `dial tcp 192.168.64.5:8080: i/o timeout`.
    pub(crate) fn timed_out(host: &str, port: u16) -> Self {
        Self(format!(
            "dial tcp {}: i/o timeout",
            join_host_port(host, port)
        ))
    }

    fn connect(addr: SocketAddr, e: &io::Error) -> Self {
        Self(format!("dial tcp {addr}: connect: {}", os_text(e)))
    }

    fn lookup(host: &str, e: Option<&io::Error>) -> Self {
        let why = e.map_or_else(|| "no such host".to_owned(), os_text);
        Self(format!("dial tcp: lookup {host}: {why}"))
    }
}

/// Connect to `host:port`: an IP literal directly, a name through the resolver, its addresses
/// tried in order. Not bounded here: callers put the whole attempt under their timeout.
pub(crate) async fn dial(host: &str, port: u16) -> Result<TcpStream, DialError> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let addrs: Vec<SocketAddr> = match bare.parse::<std::net::IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => tokio::net::lookup_host((bare, port))
            .await
            .map_err(|e| DialError::lookup(bare, Some(&e)))?
            .collect(),
    };
    let mut last = None;
    for addr in addrs {
        match TcpStream::connect(addr).await {
            Ok(s) => return Ok(s),
            Err(e) => last = Some(DialError::connect(addr, &e)),
        }
    }
    Err(last.unwrap_or_else(|| DialError::lookup(bare, None)))
}

/// `host:port`, an IPv6 literal in brackets (Go's `net.JoinHostPort`).
pub(crate) fn join_host_port(host: &str, port: u16) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// The OS's words for an I/O error the way Go prints them: `connection refused`, not
/// `Connection refused (os error 111)`.
pub(crate) fn os_text(e: &io::Error) -> String {
    if e.kind() == io::ErrorKind::TimedOut {
        return "i/o timeout".to_owned();
    }
    let full = e.to_string();
    let text = match full.find(" (os error ") {
        Some(i) => &full[..i],
        None => &full,
    };
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests;
