//! The connection cap of the kubelet port: which connections are open and how far each got.
//! A connection is *handshaking* until its TLS handshake ends, then *unauthenticated* until it
//! presented a verified client certificate or a request of it passed authentication and
//! authorization, then *authenticated*.
//!
//! At the cap, a new connection closes the oldest unauthenticated one (finished handshakes
//! that did not authenticate: idle TLS, slow headers, floods of 401s), else the oldest
//! handshaking one, and takes its place; only when every open connection is authenticated is
//! the new one refused. A closed connection's socket is released by its own task a moment
//! later; while [`CLOSING_MAX`] are on their way out, the new connection waits for one of
//! them (and the accept loop with it, so further connections wait in the kernel's backlog,
//! holding no descriptor of the agent). So connections that never authenticate hold at most
//! the cap plus that many file descriptors, and cannot keep the API server, whose connections
//! authenticate in their handshake, from getting in.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::{Arc, Mutex},
    time::Duration,
};

use tokio::sync::{Notify, oneshot};

use super::limits::{Limit, LimitMetrics};

/// Connections closed for newer ones whose sockets may not be released yet.
pub(super) const CLOSING_MAX: usize = 16;
/// The longest a new connection waits for closing sockets to be released before it is closed.
const CLOSING_WAIT: Duration = Duration::from_secs(1);

/// What a new connection gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Arrival {
    /// Below the cap: in.
    Accept,
    /// At the cap: in, and the connection with this id is closed.
    Evict(u64),
    /// Closed at once: at the cap with every connection authenticated.
    Refuse,
    /// Wait until a closing socket is released, then ask again.
    Wait,
}

/// PURE: what a new connection gets with `live` connections open and `closing` on their way
/// out under `cap`; `victim` is the connection to close for it, if any may be closed.
pub(super) fn arrival(live: usize, closing: usize, cap: usize, victim: Option<u64>) -> Arrival {
    if live < cap && live + closing < cap + CLOSING_MAX {
        Arrival::Accept
    } else if closing >= CLOSING_MAX {
        Arrival::Wait
    } else if let Some(id) = victim {
        Arrival::Evict(id)
    } else {
        Arrival::Refuse
    }
}

/// PURE: the connection to close for a newer one: the oldest unauthenticated one, else the
/// oldest still handshaking (ids grow with arrival).
pub(super) fn victim(
    oldest_unauthenticated: Option<u64>,
    oldest_handshaking: Option<u64>,
) -> Option<u64> {
    oldest_unauthenticated.or(oldest_handshaking)
}

#[derive(Debug, Default)]
struct Table {
    next: u64,
    /// Connections by id that may be closed for newer ones, each with its closing signal.
    handshaking: BTreeMap<u64, oneshot::Sender<()>>,
    unauthenticated: BTreeMap<u64, oneshot::Sender<()>>,
    authenticated: BTreeSet<u64>,
    /// Closed for newer ones, socket not released yet.
    closing: BTreeSet<u64>,
}

impl Table {
    fn live(&self) -> usize {
        self.handshaking.len() + self.unauthenticated.len() + self.authenticated.len()
    }

    /// Takes `id` out of the states a connection can be closed in: its closing signal.
    fn take(&mut self, id: u64) -> Option<oneshot::Sender<()>> {
        self.unauthenticated
            .remove(&id)
            .or_else(|| self.handshaking.remove(&id))
    }
}

/// The open connections of the port.
#[derive(Debug)]
pub(super) struct Conns {
    cap: usize,
    table: Mutex<Table>,
    /// Notified whenever a closing connection's socket is released.
    released: Notify,
    metrics: LimitMetrics,
}

/// One open connection; dropping it gives its place back.
#[derive(Debug)]
pub(super) struct Entry {
    conns: Arc<Conns>,
    id: u64,
}

/// Resolves when the connection is closed to make room for a newer one.
pub(super) type Evicted = oneshot::Receiver<()>;

impl Conns {
    /// At most `cap` connections.
    pub(super) fn new(cap: usize, metrics: LimitMetrics) -> Arc<Self> {
        Arc::new(Self {
            cap,
            table: Mutex::new(Table::default()),
            released: Notify::new(),
            metrics,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers a new, handshaking connection, closing another at the cap; `None` when it
    /// must be closed at once. Waits (up to a second) while too many sockets are closing.
    pub(super) async fn enter(self: &Arc<Self>) -> Option<(Arc<Entry>, Evicted)> {
        let deadline = tokio::time::Instant::now() + CLOSING_WAIT;
        loop {
            let released = self.released.notified();
            tokio::pin!(released);
            released.as_mut().enable();
            match self.try_enter() {
                Err(()) => {
                    if tokio::time::timeout_at(deadline, released).await.is_err() {
                        self.metrics.hit(Limit::Connections);
                        return None;
                    }
                }
                Ok(entered) => return entered,
            }
        }
    }

    /// [`Conns::enter`] without waiting: `Err` when it must wait.
    fn try_enter(self: &Arc<Self>) -> Result<Option<(Arc<Entry>, Evicted)>, ()> {
        let mut t = self.lock();
        let victim = victim(
            t.unauthenticated.keys().next().copied(),
            t.handshaking.keys().next().copied(),
        );
        match arrival(t.live(), t.closing.len(), self.cap, victim) {
            Arrival::Wait => return Err(()),
            Arrival::Accept => {}
            Arrival::Evict(id) => {
                self.metrics.hit(Limit::Connections);
                if let Some(close) = t.take(id) {
                    let _ = close.send(());
                    t.closing.insert(id);
                }
            }
            Arrival::Refuse => {
                self.metrics.hit(Limit::Connections);
                return Ok(None);
            }
        }
        let id = t.next;
        t.next += 1;
        let (tx, rx) = oneshot::channel();
        t.handshaking.insert(id, tx);
        let entry = Entry {
            conns: self.clone(),
            id,
        };
        Ok(Some((Arc::new(entry), rx)))
    }

    /// (live, of which not authenticated, closing).
    #[cfg(test)]
    pub(super) fn counts(&self) -> (usize, usize, usize) {
        let t = self.lock();
        let waiting = t.handshaking.len() + t.unauthenticated.len();
        (t.live(), waiting, t.closing.len())
    }
}

impl Entry {
    /// The TLS handshake ended without a client certificate.
    pub(super) fn handshaken(&self) {
        let mut t = self.conns.lock();
        if let Some(close) = t.handshaking.remove(&self.id) {
            t.unauthenticated.insert(self.id, close);
        }
    }

    /// The connection authenticated: it is no longer closed for newer ones.
    pub(super) fn authenticated(&self) {
        let mut t = self.conns.lock();
        if t.take(self.id).is_some() {
            t.authenticated.insert(self.id);
        }
    }

    /// Whether the connection authenticated.
    pub(super) fn is_authenticated(&self) -> bool {
        self.conns.lock().authenticated.contains(&self.id)
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        let mut t = self.conns.lock();
        if t.take(self.id).is_none()
            && !t.authenticated.remove(&self.id)
            && t.closing.remove(&self.id)
        {
            self.conns.released.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests;
