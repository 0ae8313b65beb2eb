//! The guest's TCP endpoints (VM knob `endpoints`): while `run` holds a booted VM it listens
//! on the VM's loopback address (`home::loopback_ip_for_mac`) on every port whose state
//! listens, and answers each connection by the port's state when the request arrives. `run`
//! hands the wanted ports to [`Endpoints::apply`] on every knob reload; dropping [`Endpoints`]
//! (or the process ending) closes every socket. Plain HTTP/1.1, one request per connection.
//!
//! What a request gets is decided by the pure [`answer`]; this module owns the sockets.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

use crate::knobs::EndpointState;

/// The longest request head read; a longer one is dropped unanswered.
const MAX_HEAD: usize = 16 * 1024;
/// How long a connection may take to send its request head.
const HEAD_DEADLINE: Duration = Duration::from_secs(30);

/// The listening ports of one VM.
pub(crate) struct Endpoints {
    ip: Ipv4Addr,
    vm: Arc<str>,
    open: BTreeMap<u16, Port>,
    /// Ports whose bind failed, reported once until they bind or leave the knobs.
    failed: BTreeSet<u16>,
}

/// One listening port: its current state, read by every connection, and the accept task,
/// which owns the listener and its connections.
struct Port {
    state: watch::Sender<EndpointState>,
    task: JoinHandle<()>,
}

impl Drop for Port {
    fn drop(&mut self) {
        self.task.abort();
    }
}

// === impl Endpoints ===

impl Endpoints {
    /// Nothing listening yet.
    pub(crate) fn new(ip: Ipv4Addr, vm: &str) -> Endpoints {
        Endpoints {
            ip,
            vm: vm.into(),
            open: BTreeMap::new(),
            failed: BTreeSet::new(),
        }
    }

    /// Makes the sockets match `wanted`: a port in a listening state is bound (or keeps its
    /// socket and takes the new state), any other port is closed.
    pub(crate) fn apply(&mut self, wanted: &BTreeMap<u16, EndpointState>) {
        let listens = |port: &u16| wanted.get(port).is_some_and(|s| s.listens());
        self.open.retain(|port, _| listens(port));
        self.failed.retain(listens);
        for (&port, &state) in wanted.iter().filter(|(_, s)| s.listens()) {
            if let Some(open) = self.open.get(&port) {
                open.state.send_replace(state);
                continue;
            }
            match self.listen(port, state) {
                Ok(open) => {
                    self.failed.remove(&port);
                    self.open.insert(port, open);
                }
                Err(e) => {
                    if self.failed.insert(port) {
                        eprintln!("fake-tart: cannot listen on {}:{port}: {e}", self.ip);
                    }
                }
            }
        }
    }

    fn listen(&self, port: u16, state: EndpointState) -> std::io::Result<Port> {
        let std = std::net::TcpListener::bind(SocketAddr::from((self.ip, port)))?;
        std.set_nonblocking(true)?;
        let listener = TcpListener::from_std(std)?;
        let (tx, rx) = watch::channel(state);
        let task = tokio::spawn(accept_loop(listener, rx, self.vm.clone()));
        Ok(Port { state: tx, task })
    }
}

async fn accept_loop(listener: TcpListener, state: watch::Receiver<EndpointState>, vm: Arc<str>) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    connections.spawn(connection(stream, state.clone(), vm.clone()));
                }
                // Out of descriptors or the like: let connections finish, then accept again.
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

async fn connection(mut stream: TcpStream, state: watch::Receiver<EndpointState>, vm: Arc<str>) {
    let head = tokio::time::timeout(HEAD_DEADLINE, read_head(&mut stream)).await;
    // A TCP check connects and closes without a request: nothing to answer.
    if !matches!(head, Ok(true)) {
        return;
    }
    let state = *state.borrow();
    match answer(state, &vm) {
        Some(response) => {
            let _ = stream.write_all(&response).await;
            let _ = stream.shutdown().await;
        }
        // Hanging: keep the connection open, reading nothing useful, until the peer leaves.
        None => {
            let mut sink = [0u8; 1024];
            while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {}
        }
    }
}

/// Reads until the blank line that ends an HTTP request head; false on EOF, error or a head
/// over [`MAX_HEAD`].
async fn read_head(stream: &mut TcpStream) -> bool {
    let mut head = Vec::new();
    let mut chunk = [0u8; 1024];
    loop {
        match stream.read(&mut chunk).await {
            Ok(n) if n > 0 => head.extend_from_slice(&chunk[..n]),
            _ => return false,
        }
        if head.windows(4).any(|w| w == b"\r\n\r\n") || head.windows(2).any(|w| w == b"\n\n") {
            return true;
        }
        if head.len() > MAX_HEAD {
            return false;
        }
    }
}

/// The whole HTTP response to any request on a port in `state`; `None` means no answer ever.
/// The body names the state and the VM, so a test can tell which guest answered.
pub(crate) fn answer(state: EndpointState, vm: &str) -> Option<Vec<u8>> {
    let status = match state {
        EndpointState::Healthy => "200 OK",
        EndpointState::Failing => "500 Internal Server Error",
        EndpointState::Hanging | EndpointState::Closed => return None,
    };
    let body = format!("{} {vm}\n", state.as_str());
    Some(
        format!(
            "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .into_bytes(),
    )
}

#[cfg(test)]
mod tests;
