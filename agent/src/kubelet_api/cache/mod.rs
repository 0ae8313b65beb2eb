//! A small time-bounded cache for review answers, with one TTL for positive and one for
//! negative answers (kubelet caches allowed and denied decisions for different times). It is
//! bounded: when full, expired entries are dropped, and if none were, everything is.

use std::{collections::HashMap, hash::Hash, time::Duration};

use tokio::time::Instant;

/// Entries kept at most; far above what one node's callers produce.
const CAPACITY: usize = 4096;

/// Answers keyed by question.
#[derive(Debug)]
pub(super) struct TtlCache<K, V> {
    positive: Duration,
    negative: Duration,
    entries: HashMap<K, (V, Instant)>,
}

impl<K: Eq + Hash, V: Clone> TtlCache<K, V> {
    /// Positive answers live `positive`, negative ones `negative`.
    pub(super) fn new(positive: Duration, negative: Duration) -> Self {
        Self {
            positive,
            negative,
            entries: HashMap::new(),
        }
    }

    /// The answer, if cached and not expired.
    pub(super) fn get(&self, key: &K) -> Option<V> {
        self.entries
            .get(key)
            .filter(|(_, until)| Instant::now() < *until)
            .map(|(v, _)| v.clone())
    }

    /// Remembers `value`; `positive` picks the TTL.
    pub(super) fn put(&mut self, key: K, value: V, positive: bool) {
        let now = Instant::now();
        if self.entries.len() >= CAPACITY {
            self.entries.retain(|_, (_, until)| now < *until);
            if self.entries.len() >= CAPACITY {
                self.entries.clear();
            }
        }
        let ttl = if positive {
            self.positive
        } else {
            self.negative
        };
        self.entries.insert(key, (value, now + ttl));
    }
}

#[cfg(test)]
mod tests;
