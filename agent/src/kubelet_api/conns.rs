//! The connection cap of the kubelet port: which connections are open, and which of them are
//! still unauthenticated. A connection is authenticated once it presented a verified client
//! certificate or a request of it passed authentication and authorization.
//!
//! At the cap, a new connection closes the oldest unauthenticated one and takes its place;
//! only when every open connection is authenticated is the new one refused. So a crowd of
//! connections that never authenticate (idle TLS, slow headers, floods of 401s) can hold the
//! port's file descriptors and memory only up to the cap, and can never keep the API server,
//! whose connections authenticate at once, from getting in.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::{Arc, Mutex},
};

use tokio::sync::oneshot;

use super::limits::{Limit, LimitMetrics};

/// What a new connection gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// Below the cap: in.
    Accept,
    /// At the cap: in, and the unauthenticated connection with this id is closed.
    Evict(u64),
    /// At the cap with every connection authenticated: closed at once.
    Refuse,
}

/// PURE: what a new connection gets with `open` connections open under `cap`, the oldest
/// unauthenticated one being `oldest_pending`.
pub fn arrival(open: usize, cap: usize, oldest_pending: Option<u64>) -> Arrival {
    if open < cap {
        Arrival::Accept
    } else if let Some(id) = oldest_pending {
        Arrival::Evict(id)
    } else {
        Arrival::Refuse
    }
}

#[derive(Debug, Default)]
struct Table {
    next: u64,
    /// Unauthenticated connections by id (ids grow: the first is the oldest), each with
    /// the sender that closes it.
    pending: BTreeMap<u64, oneshot::Sender<()>>,
    authenticated: BTreeSet<u64>,
}

impl Table {
    fn open(&self) -> usize {
        self.pending.len() + self.authenticated.len()
    }
}

/// The open connections of the port.
#[derive(Debug)]
pub struct Conns {
    cap: usize,
    table: Mutex<Table>,
    metrics: LimitMetrics,
}

/// One open connection; dropping it gives its place back.
#[derive(Debug)]
pub struct Entry {
    conns: Arc<Conns>,
    id: u64,
}

/// Resolves when the connection is closed to make room for a newer one.
pub type Evicted = oneshot::Receiver<()>;

impl Conns {
    /// At most `cap` connections.
    pub fn new(cap: usize, metrics: LimitMetrics) -> Arc<Self> {
        Arc::new(Self {
            cap,
            table: Mutex::new(Table::default()),
            metrics,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers a new, unauthenticated connection, closing the oldest unauthenticated one
    /// at the cap; `None` when it must be closed at once.
    pub fn enter(self: &Arc<Self>) -> Option<(Arc<Entry>, Evicted)> {
        let mut t = self.lock();
        let open = t.open();
        let oldest = t.pending.keys().next().copied();
        match arrival(open, self.cap, oldest) {
            Arrival::Accept => {}
            Arrival::Evict(id) => {
                self.metrics.hit(Limit::Connections);
                if let Some(close) = t.pending.remove(&id) {
                    let _ = close.send(());
                }
            }
            Arrival::Refuse => {
                self.metrics.hit(Limit::Connections);
                return None;
            }
        }
        let id = t.next;
        t.next += 1;
        let (tx, rx) = oneshot::channel();
        t.pending.insert(id, tx);
        let entry = Entry {
            conns: self.clone(),
            id,
        };
        Some((Arc::new(entry), rx))
    }

    /// (open, of which unauthenticated).
    #[cfg(test)]
    pub fn counts(&self) -> (usize, usize) {
        let t = self.lock();
        (t.open(), t.pending.len())
    }
}

impl Entry {
    /// The connection authenticated: it is no longer closed for newer ones.
    pub fn authenticated(&self) {
        let mut t = self.conns.lock();
        if t.pending.remove(&self.id).is_some() {
            t.authenticated.insert(self.id);
        }
    }

    /// Whether the connection authenticated.
    pub fn is_authenticated(&self) -> bool {
        self.conns.lock().authenticated.contains(&self.id)
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        let mut t = self.conns.lock();
        // An evicted connection is in neither set any more.
        if t.pending.remove(&self.id).is_none() {
            t.authenticated.remove(&self.id);
        }
    }
}

#[cfg(test)]
#[path = "conns_tests.rs"]
mod tests;
