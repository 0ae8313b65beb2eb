//! The kubelet port's limits as the configuration sets them (docs/kubelet-api.md "Limits");
//! the kubelet API (`kubelet_api/limits/`, `kubelet_api/conns/`) applies them.

use std::time::Duration;

/// kubelet's default `streamingConnectionIdleTimeout`: a streaming session with nothing moving
/// either way for this long is closed. The flag's default and the sessions' own default.
pub(crate) const STREAMING_IDLE: Duration = Duration::from_secs(4 * 60 * 60);

/// What the kubelet port allows, from the configuration; [`Default`] holds the flags' defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    /// A connection's TLS handshake must finish within this.
    pub handshake: Duration,
    /// Each request's headers must arrive within this, counted from the end of the handshake
    /// or of the previous response (so it is also the keep-alive idle timeout).
    pub header: Duration,
    /// Connections open at once (streaming sessions, which left HTTP, not counted).
    pub max_connections: usize,
    /// exec, attach and port-forward sessions at once.
    pub max_streams: usize,
    /// `/containerLogs?follow=true` responses at once.
    pub max_log_follows: usize,
    /// A streaming session with nothing moving either way for this long is closed.
    pub streaming_idle: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            handshake: Duration::from_secs(10),
            header: Duration::from_secs(30),
            max_connections: 96,
            max_streams: 16,
            max_log_follows: 32,
            streaming_idle: STREAMING_IDLE,
        }
    }
}
