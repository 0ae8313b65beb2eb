//! `/stats/summary` and `/metrics/resource` (docs/reference/kubelet-api.md §3.4, §3.5): what
//! metrics-server and `kubectl top` read. The numbers come from a [`StatsSource`] (the vitals
//! sampler); this file only renders them — the `stats/v1alpha1` Summary JSON and the Prometheus
//! text with per-sample millisecond timestamps. Pure.
//!
//! metrics-server drops a node whose CPU or memory is 0 and a whole Pod when any of its
//! containers has a 0, so a Pod without a positive sample of both is left out rather than
//! reported as 0.

use std::fmt::Write as _;

use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use super::scrape::text::{esc, family, samples};

/// One CPU and memory reading.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Usage {
    /// When it was measured.
    pub at: Timestamp,
    /// Cumulative CPU time.
    pub cpu_seconds_total: f64,
    /// The current rate, when two samples exist.
    pub cpu_cores: Option<f64>,
    /// Memory the workload holds (the VM's resident memory).
    pub working_set_bytes: u64,
}

impl Usage {
    fn reportable(&self) -> bool {
        self.cpu_seconds_total > 0.0 && self.working_set_bytes > 0
    }
}

/// A Pod's VM, reported as its one container.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PodUsage {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub container: String,
    /// The container's image, as the Pod names it.
    pub image: String,
    /// The VM's name (cAdvisor's `name` label; `id` is derived from it).
    pub vm: String,
    /// The memory the VM was given from the Pod's resources; `None` when the image's own
    /// value was kept (the agent does not know it).
    pub memory_limit_bytes: Option<u64>,
    /// When the VM was first seen running.
    pub start: Timestamp,
    pub usage: Usage,
}

/// What the two endpoints render.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StatsView {
    pub node_name: String,
    /// When the agent started.
    pub node_start: Timestamp,
    pub node: Option<Usage>,
    pub pods: Vec<PodUsage>,
}

/// Where the numbers come from.
pub(crate) trait StatsSource: Send + Sync + 'static {
    /// The latest numbers.
    fn stats(&self) -> StatsView;
}

/// `metav1.Time`: RFC 3339, seconds, UTC.
fn time(t: Timestamp) -> String {
    Timestamp::from_second(t.as_second())
        .unwrap_or(t)
        .to_string()
}

fn cpu(u: &Usage) -> Value {
    let mut v = json!({
        "time": time(u.at),
        "usageCoreNanoSeconds": (u.cpu_seconds_total * 1e9) as u64,
    });
    if let Some(c) = u.cpu_cores {
        v["usageNanoCores"] = json!((c * 1e9) as u64);
    }
    v
}

fn memory(u: &Usage) -> Value {
    json!({
        "time": time(u.at),
        "usageBytes": u.working_set_bytes,
        "workingSetBytes": u.working_set_bytes,
        "rssBytes": u.working_set_bytes,
    })
}

/// The Summary JSON. `nodeName`, `startTime` and `pods` are always present.
pub(crate) fn summary(v: &StatsView) -> Value {
    let mut node = json!({
        "nodeName": v.node_name,
        "startTime": time(v.node_start),
    });
    if let Some(u) = v.node.as_ref().filter(|u| u.reportable()) {
        node["cpu"] = cpu(u);
        node["memory"] = memory(u);
    }
    let pods: Vec<Value> = v
        .pods
        .iter()
        .filter(|p| p.usage.reportable())
        .map(|p| {
            json!({
                "podRef": {"name": p.name, "namespace": p.namespace, "uid": p.uid},
                "startTime": time(p.start),
                "cpu": cpu(&p.usage),
                "memory": memory(&p.usage),
                "containers": [{
                    "name": p.container,
                    "startTime": time(p.start),
                    "cpu": cpu(&p.usage),
                    "memory": memory(&p.usage),
                }],
            })
        })
        .collect();
    json!({"node": node, "pods": pods})
}

/// The `/metrics/resource` text.
pub(crate) fn resource_metrics(v: &StatsView) -> String {
    let mut out = String::new();
    let node = v.node.filter(Usage::reportable);
    let pods: Vec<&PodUsage> = v.pods.iter().filter(|p| p.usage.reportable()).collect();
    let labels = |p: &PodUsage| {
        format!(
            "container=\"{}\",namespace=\"{}\",pod=\"{}\"",
            esc(&p.container),
            esc(&p.namespace),
            esc(&p.name)
        )
    };
    let pod_labels = |p: &PodUsage| {
        format!(
            "namespace=\"{}\",pod=\"{}\"",
            esc(&p.namespace),
            esc(&p.name)
        )
    };
    let ms = |u: &Usage| u.at.as_millisecond();
    family(
        &mut out,
        "container_cpu_usage_seconds_total",
        "counter",
        "Cumulative cpu time consumed by the container in core-seconds",
    );
    let rows = pods
        .iter()
        .map(|p| (labels(p), p.usage.cpu_seconds_total, Some(ms(&p.usage))));
    samples(&mut out, "container_cpu_usage_seconds_total", rows);
    family(
        &mut out,
        "container_memory_working_set_bytes",
        "gauge",
        "Current working set of the container in bytes",
    );
    let rows = pods
        .iter()
        .map(|p| (labels(p), p.usage.working_set_bytes, Some(ms(&p.usage))));
    samples(&mut out, "container_memory_working_set_bytes", rows);
    family(
        &mut out,
        "container_start_time_seconds",
        "gauge",
        "Start time of the container since unix epoch in seconds",
    );
    let rows = pods.iter().map(|p| (labels(p), p.start.as_second(), None));
    samples(&mut out, "container_start_time_seconds", rows);
    family(
        &mut out,
        "node_cpu_usage_seconds_total",
        "counter",
        "Cumulative cpu time consumed by the node in core-seconds",
    );
    let rows = node
        .iter()
        .map(|u| (String::new(), u.cpu_seconds_total, Some(ms(u))));
    samples(&mut out, "node_cpu_usage_seconds_total", rows);
    family(
        &mut out,
        "node_memory_working_set_bytes",
        "gauge",
        "Current working set of the node in bytes",
    );
    let rows = node
        .iter()
        .map(|u| (String::new(), u.working_set_bytes, Some(ms(u))));
    samples(&mut out, "node_memory_working_set_bytes", rows);
    family(
        &mut out,
        "pod_cpu_usage_seconds_total",
        "counter",
        "Cumulative cpu time consumed by the pod in core-seconds",
    );
    let rows = pods
        .iter()
        .map(|p| (pod_labels(p), p.usage.cpu_seconds_total, Some(ms(&p.usage))));
    samples(&mut out, "pod_cpu_usage_seconds_total", rows);
    family(
        &mut out,
        "pod_memory_working_set_bytes",
        "gauge",
        "Current working set of the pod in bytes",
    );
    let rows = pods
        .iter()
        .map(|p| (pod_labels(p), p.usage.working_set_bytes, Some(ms(&p.usage))));
    samples(&mut out, "pod_memory_working_set_bytes", rows);
    family(
        &mut out,
        "resource_scrape_error",
        "gauge",
        "1 if there was an error while getting container metrics, 0 otherwise",
    );
    let _ = writeln!(out, "resource_scrape_error {}", u8::from(node.is_none()));
    family(
        &mut out,
        "scrape_error",
        "gauge",
        "1 if there was an error while getting container metrics, 0 otherwise",
    );
    let _ = writeln!(out, "scrape_error {}", u8::from(node.is_none()));
    out
}

#[cfg(test)]
mod tests;
