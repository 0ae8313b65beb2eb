//! The client certificate's metrics, registered only while the agent authenticates with one:
//! when the certificate in use expires (kubelet exports the
//! same fact as `kubelet_certificate_manager_client_ttl_seconds`; a timestamp stays right
//! between updates, and `… - time()` is the TTL) and how many renewals failed (kubelet's
//! `kubelet_certificate_manager_client_expiration_renew_errors`).

use std::time::SystemTime;

use prometheus_client::{
    metrics::{counter::Counter, gauge::Gauge},
    registry::Registry,
};

use crate::metrics::register;

/// Clones share the same series.
#[derive(Clone, Debug, Default)]
pub(crate) struct ClientCertMetrics {
    /// `tart_kubelet_client_certificate_expiration_timestamp_seconds`.
    pub expiration: Gauge,
    /// `tart_kubelet_client_certificate_renew_errors_total`.
    pub renew_errors: Counter,
}

impl ClientCertMetrics {
    /// Create the metrics and register them under `tart_kubelet_`.
    pub(crate) fn register(registry: &mut Registry) -> Self {
        let m = Self::default();
        let r = registry.sub_registry_with_prefix("tart_kubelet");
        register!(r;
            "client_certificate_expiration_timestamp_seconds", "End of validity of the client certificate the agent authenticates with, in Unix seconds" => m.expiration;
            "client_certificate_renew_errors", "Failed attempts to renew the client certificate" => m.renew_errors;
        );
        m
    }

    /// Records that the certificate in use ends at `not_after`.
    pub(crate) fn in_use_until(&self, not_after: SystemTime) {
        let secs = not_after
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        self.expiration.set(secs);
    }
}

#[cfg(test)]
mod tests;
