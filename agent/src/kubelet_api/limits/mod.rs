//! The kubelet port's limits (docs/kubelet-api.md "Limits"; their values are
//! [`crate::config::Limits`]): deadlines for a connection's TLS
//! handshake and request headers, a cap on open connections (`conns.rs` applies it),
//! caps on concurrent streaming sessions and followed logs ([`Slots`]), and the streaming
//! idle timeout. A request over a session cap gets `429`; what the connection cap does is
//! `conns.rs`'s. Every refusal is counted by the limit that made it.

use std::sync::Arc;

use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{counter::Counter, family::Family},
    registry::Registry,
};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::metrics::register;

/// Which limit refused or closed something (`limit` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Limit {
    /// The connection cap: a new connection refused, or an unauthenticated one closed for it.
    Connections,
    /// A TLS handshake that did not finish in time.
    Handshake,
    /// Request headers that did not arrive in time.
    Header,
    /// The streaming session cap.
    Streams,
    /// The followed-log cap.
    LogFollows,
}

impl Limit {
    /// Every limit.
    pub(crate) const ALL: [Limit; 5] = [
        Limit::Connections,
        Limit::Handshake,
        Limit::Header,
        Limit::Streams,
        Limit::LogFollows,
    ];

    /// Label value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Limit::Connections => "connections",
            Limit::Handshake => "handshake_timeout",
            Limit::Header => "header_timeout",
            Limit::Streams => "streams",
            Limit::LogFollows => "log_follows",
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LimitLabels {
    limit: &'static str,
}

/// `tart_kubelet_kubelet_api_limited_total{limit}`. Clones share the series; [`Default`] is
/// unregistered (tests).
#[derive(Clone, Debug, Default)]
pub(crate) struct LimitMetrics {
    limited: Family<LimitLabels, Counter>,
}

impl LimitMetrics {
    /// Create the metric and register it under `tart_kubelet_`.
    pub(crate) fn register(registry: &mut Registry) -> Self {
        let m = Self::default();
        let r = registry.sub_registry_with_prefix("tart_kubelet");
        register!(r;
            "kubelet_api_limited", "Connections and requests of the kubelet port refused or closed, by the limit that did it" => m.limited;
        );
        for l in Limit::ALL {
            let _ = m.limited.get_or_create(&LimitLabels { limit: l.as_str() });
        }
        m
    }

    /// Count one refusal by `limit`.
    pub(crate) fn hit(&self, limit: Limit) {
        self.limited
            .get_or_create(&LimitLabels {
                limit: limit.as_str(),
            })
            .inc();
    }

    /// How many `limit` refused so far.
    #[cfg(test)]
    pub(crate) fn count(&self, limit: Limit) -> u64 {
        self.limited
            .get_or_create(&LimitLabels {
                limit: limit.as_str(),
            })
            .get()
    }
}

/// A cap on things held at once (sessions, followed logs): a taken slot is given back when
/// its [`Slot`] is dropped.
#[derive(Debug, Clone)]
pub(crate) struct Slots {
    cap: usize,
    free: Arc<Semaphore>,
    limit: Limit,
    metrics: LimitMetrics,
}

/// One taken slot.
#[derive(Debug)]
pub(crate) struct Slot(#[allow(dead_code)] OwnedSemaphorePermit);

impl Slots {
    /// `cap` slots, refusals counted as `limit`.
    pub(crate) fn new(cap: usize, limit: Limit, metrics: LimitMetrics) -> Self {
        Self {
            cap,
            free: Arc::new(Semaphore::new(cap)),
            limit,
            metrics,
        }
    }

    /// A slot, or the refusal's message when all are taken (counted).
    ///
    /// # Errors
    /// The `429` message naming what is full and its cap.
    pub(crate) fn take(&self, what: &str) -> Result<Slot, String> {
        match self.free.clone().try_acquire_owned() {
            Ok(p) => Ok(Slot(p)),
            Err(_) => {
                self.metrics.hit(self.limit);
                Err(format!(
                    "too many {what} on this node at once (at most {}); try again when one ends",
                    self.cap
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests;
