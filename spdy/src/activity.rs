//! When a connection last moved data either way, for its idle timeout; shared by the SPDY and
//! WebSocket connections (their reader and writer tasks hold clones).

use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use tokio::time::Instant;

/// The last movement on one connection.
#[derive(Clone)]
pub struct Activity {
    base: Instant,
    last_ms: Arc<AtomicU64>,
}

impl Default for Activity {
    fn default() -> Self {
        Self::new()
    }
}

impl Activity {
    /// Starting now.
    pub fn new() -> Self {
        Self {
            base: Instant::now(),
            last_ms: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Data moved now.
    pub fn touch(&self) {
        let ms = u64::try_from(self.base.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.store(ms, Ordering::Relaxed);
    }

    /// When the connection goes idle after `idle` without movement.
    pub fn idle_at(&self, idle: Duration) -> Instant {
        self.base + Duration::from_millis(self.last_ms.load(Ordering::Relaxed)) + idle
    }
}
