//! Node-side metrics (prefix `tart_kubelet_`). One [`NodeMetrics`] is registered into the
//! [`Registry`] that `entry::run` creates and is cloned into the tasks that update it. Label
//! values come only from closed sets (`&'static str` from `as_str` functions). Pod-side
//! metrics are registered by the Pod side.

pub(crate) mod process;

use crate::api::ApiErrorKind;
use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{counter::Counter, family::Family, gauge::Gauge, histogram::Histogram},
    registry::Registry,
};

/// Register each `name, help => metric` into a registry (its prefix set by the caller).
macro_rules! register {
    ($r:expr; $($name:literal, $help:literal => $metric:expr;)*) => {
        $( $r.register($name, $help, $metric.clone()); )*
    };
}
pub(crate) use register;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct OutcomeLabels {
    /// `ok` or `error`.
    pub outcome: &'static str,
}

/// `build_info` labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct BuildLabels {
    /// Agent version.
    pub version: &'static str,
    /// Tart version (`unknown` until probed). Bounded: one value per agent process lifetime
    /// at a time; the old series is removed when it changes.
    pub tart_version: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct ConditionLabels {
    /// Node condition type.
    pub condition: &'static str,
}

/// The `tart_kubelet_api_errors_total` family, shared by the node and Pod sides.
pub(crate) type ApiErrors = Family<ApiErrorLabels, Counter>;

/// `api_errors_total` labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct ApiErrorLabels {
    /// `node`, `lease`, `pod`, `event` or [`CSR_RESOURCE`].
    pub resource: &'static str,
    /// [`ApiErrorKind::as_str`].
    pub kind: &'static str,
}

/// `api_errors_total`'s `resource` for the serving certificate's requests.
pub(crate) const CSR_RESOURCE: &str = "certificatesigningrequest";

/// The node-side metrics. Clones share the same series.
#[derive(Clone, Debug)]
pub(crate) struct NodeMetrics {
    /// `tart_kubelet_build_info`.
    pub build_info: Family<BuildLabels, Gauge>,
    /// `tart_kubelet_node_lease_renewals_total`.
    pub lease_renewals: Family<OutcomeLabels, Counter>,
    /// `tart_kubelet_node_lease_renew_duration_seconds`.
    pub lease_renew_duration: Histogram,
    /// `tart_kubelet_node_status_updates_total`.
    pub status_updates: Family<OutcomeLabels, Counter>,
    /// `tart_kubelet_node_condition`.
    pub node_condition: Family<ConditionLabels, Gauge>,
    /// `tart_kubelet_vm_slots`.
    pub vm_slots: Gauge,
    /// `tart_kubelet_vm_slots_used` (kept equal to the slots in use by the node's `VmSlots`).
    pub vm_slots_used: Gauge,
    /// `tart_kubelet_tart_home_free_bytes`.
    pub tart_home_free_bytes: Gauge,
    /// `tart_kubelet_api_errors_total`.
    pub api_errors: Family<ApiErrorLabels, Counter>,
    /// `tart_kubelet_serving_csr_pending_since_seconds`.
    pub serving_csr_pending_since: Gauge,
}

/// Condition types reported as `tart_kubelet_node_condition`.
pub(crate) const CONDITIONS: [&str; 5] = [
    "Ready",
    "MemoryPressure",
    "DiskPressure",
    "PIDPressure",
    "TartReady",
];

impl NodeMetrics {
    /// Create the metrics and register them under `tart_kubelet_`.
    pub(crate) fn register(registry: &mut Registry) -> Self {
        let m = Self {
            build_info: Family::default(),
            lease_renewals: Family::default(),
            lease_renew_duration: Histogram::new([
                0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
            ]),
            status_updates: Family::default(),
            node_condition: Family::default(),
            vm_slots: Gauge::default(),
            vm_slots_used: Gauge::default(),
            tart_home_free_bytes: Gauge::default(),
            api_errors: Family::default(),
            serving_csr_pending_since: Gauge::default(),
        };
        let r = registry.sub_registry_with_prefix("tart_kubelet");
        register!(r;
            "build_info", "Agent and tart versions; always 1" => m.build_info;
            "node_lease_renewals", "Node Lease renewals by outcome" => m.lease_renewals;
            "node_lease_renew_duration_seconds", "Duration of one Node Lease renewal request" => m.lease_renew_duration;
            "node_status_updates", "Node status writes by outcome" => m.status_updates;
            "node_condition", "1 when the node condition's status is True" => m.node_condition;
            "vm_slots", "VM slots of this node" => m.vm_slots;
            "vm_slots_used", "VM slots in use" => m.vm_slots_used;
            "tart_home_free_bytes", "Free bytes on the TART_HOME volume" => m.tart_home_free_bytes;
            "api_errors", "Kubernetes API errors by resource and kind" => m.api_errors;
            "serving_csr_pending_since_seconds", "Unix time the kubelet API's serving certificate request waiting for approval was created; 0 while none waits" => m.serving_csr_pending_since;
        );
        // Pre-create the closed label sets so every series exists from the first scrape.
        for outcome in ["ok", "error"] {
            let _ = m.lease_renewals.get_or_create(&OutcomeLabels { outcome });
            let _ = m.status_updates.get_or_create(&OutcomeLabels { outcome });
        }
        for condition in CONDITIONS {
            let _ = m
                .node_condition
                .get_or_create(&ConditionLabels { condition });
        }
        for resource in ["node", "lease", "pod", "event", CSR_RESOURCE] {
            for kind in ApiErrorKind::ALL.map(ApiErrorKind::as_str) {
                let _ = m
                    .api_errors
                    .get_or_create(&ApiErrorLabels { resource, kind });
            }
        }
        m.set_tart_version(None);
        m
    }

    /// Set `build_info`'s `tart_version` (replacing the previous series).
    pub(crate) fn set_tart_version(&self, tart_version: Option<&str>) {
        let labels = BuildLabels {
            version: env!("CARGO_PKG_VERSION"),
            tart_version: tart_version.unwrap_or("unknown").to_owned(),
        };
        if self.build_info.get(&labels).is_some_and(|g| g.get() == 1) {
            return;
        }
        self.build_info.clear();
        self.build_info.get_or_create(&labels).set(1);
    }

    /// Count an API error.
    pub(crate) fn api_error(&self, resource: &'static str, err: &kube::Error) {
        count_api_error(&self.api_errors, resource, Some(err));
    }
}

/// Count a failed API call on `tart_kubelet_api_errors_total`; `None` is a request that ran
/// past its deadline.
pub(crate) fn count_api_error(
    family: &ApiErrors,
    resource: &'static str,
    err: Option<&kube::Error>,
) {
    let kind = err.map_or(ApiErrorKind::Timeout, ApiErrorKind::of).as_str();
    family
        .get_or_create(&ApiErrorLabels { resource, kind })
        .inc();
}

/// OpenMetrics content type.
pub(crate) const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// Prometheus text exposition format 0.0.4 content type.
pub(crate) const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// OpenMetrics text -> Prometheus text format 0.0.4: counter families are named with their
/// `_total` suffix in `# HELP`/`# TYPE`, and `# UNIT` and `# EOF` are dropped. Samples are
/// identical in both formats for the metric types used here (counter, gauge, histogram).
pub(crate) fn to_prometheus_text(openmetrics: &str) -> String {
    let counters: std::collections::HashSet<&str> = openmetrics
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE ")?.strip_suffix(" counter"))
        .collect();
    let mut out = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let renamed = ["# HELP ", "# TYPE "].iter().find_map(|p| {
            let rest = line.strip_prefix(p)?;
            let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
            counters
                .contains(name)
                .then(|| format!("{p}{name}_total {tail}"))
        });
        out.push_str(renamed.as_deref().unwrap_or(line));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests;
