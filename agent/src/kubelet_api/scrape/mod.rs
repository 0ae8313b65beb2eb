//! kubelet's Prometheus paths on the kubelet port, which kube-prometheus-stack's kubelet job
//! scrapes on every Node (docs/metrics.md "The kubelet port's metrics paths"):
//!
//! - `/metrics`: kubelet's node series the standard dashboards and alerts read
//!   ([`kubelet_series`]: `kubelet_node_name`, `kubelet_running_pods`,
//!   `kubelet_running_containers`), then the agent's own registry (`tart_kubelet_*` and
//!   `process_*`);
//! - `/metrics/cadvisor`: cAdvisor's container series for each running Pod's VM
//!   ([`cadvisor`], from the same [`StatsView`] as `/metrics/resource`);
//! - `/metrics/probes`: `prober_probe_total` ([`probes::ProberCounts`], counted by the Pod side)
//!   and `process_start_time_seconds`.
//!
//! All three are the Prometheus text format 0.0.4. The renderers are pure; [`Scrape`] holds
//! what they read besides the Pods and the stats.

pub(crate) mod probes;
pub(crate) mod text;

use std::{fmt::Write as _, sync::Arc};

use k8s_openapi::api::core::v1::Pod;
use prometheus_client::registry::Registry;

use super::stats::{PodUsage, StatsView};
use crate::metrics::{process::ProcessMetrics, to_prometheus_text};
use text::{esc, family, plain_family, samples};

/// What the metrics paths read besides the Pods and the stats.
#[derive(Clone)]
pub(crate) struct Scrape {
    /// This Node's name (`kubelet_node_name`).
    pub node_name: String,
    /// The agent's own metrics (the admin endpoint's registry).
    pub registry: Arc<Registry>,
    /// The agent process, for `/metrics/probes`' start time.
    pub process: ProcessMetrics,
    /// Probe attempts by container and result.
    pub probes: probes::ProberCounts,
}

/// PURE: kubelet's node series, from the Pods bound here as their published statuses say.
/// A Pod runs when one of its containers runs (its VM is kubelet's sandbox); containers are
/// counted by state `running` and `exited` (a container waiting to start has no VM yet, so
/// there is nothing of kubelet's `created` state to count).
pub(crate) fn kubelet_series(node_name: &str, pods: &[Arc<Pod>]) -> String {
    let mut running_pods = 0u64;
    let (mut running, mut exited) = (0u64, 0u64);
    for p in pods {
        let statuses = p
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.as_deref())
            .unwrap_or_default();
        let mut any_running = false;
        for c in statuses {
            let state = c.state.as_ref();
            if state.is_some_and(|s| s.running.is_some()) {
                running += 1;
                any_running = true;
            } else if state.is_some_and(|s| s.terminated.is_some()) {
                exited += 1;
            }
        }
        running_pods += u64::from(any_running);
    }
    let mut out = String::new();
    family(
        &mut out,
        "kubelet_node_name",
        "gauge",
        "The node's name. The count is always 1.",
    );
    let _ = writeln!(out, "kubelet_node_name{{node=\"{}\"}} 1", esc(node_name));
    family(
        &mut out,
        "kubelet_running_containers",
        "gauge",
        "Number of containers currently running",
    );
    for (state, n) in [("exited", exited), ("running", running)] {
        let _ = writeln!(
            out,
            "kubelet_running_containers{{container_state=\"{state}\"}} {n}"
        );
    }
    family(
        &mut out,
        "kubelet_running_pods",
        "gauge",
        "Number of pods that have a running pod sandbox",
    );
    let _ = writeln!(out, "kubelet_running_pods {running_pods}");
    out
}

/// The `/metrics` body: [`kubelet_series`], then the agent's registry in the text format.
///
/// # Errors
/// The registry did not encode.
pub(crate) fn metrics(scrape: &Scrape, pods: &[Arc<Pod>]) -> Result<String, std::fmt::Error> {
    let mut om = String::new();
    prometheus_client::encoding::text::encode(&mut om, &scrape.registry)?;
    Ok(kubelet_series(&scrape.node_name, pods) + &to_prometheus_text(&om))
}

/// The `/metrics/probes` body.
pub(crate) fn probes_text(scrape: &Scrape) -> String {
    let mut out = scrape.probes.render();
    if let Some(t) = scrape.process.latest().start_time_seconds {
        let _ = writeln!(
            out,
            "# HELP process_start_time_seconds [ALPHA] Start time of the process since unix epoch in seconds."
        );
        let _ = writeln!(out, "# TYPE process_start_time_seconds gauge");
        let _ = writeln!(out, "process_start_time_seconds {t}");
    }
    out
}

/// cAdvisor's container id of a VM: a cgroup-like path, unique per VM.
fn id(p: &PodUsage) -> String {
    format!("/tart/{}", p.vm)
}

/// PURE: the `/metrics/cadvisor` body: one container row per running Pod's VM, with the
/// labels kubelet gives cAdvisor's series (`container`, `id`, `image`, `name`, `namespace`,
/// `pod`) and the sample's millisecond timestamp. Only what the vitals measure is there:
/// CPU time and resident memory (which is the working set, the RSS and the usage of a VM
/// process), the start time, and the memory limit when the Pod's resources set the VM's
/// memory. A Pod without a positive sample is left out, as on `/metrics/resource`.
pub(crate) fn cadvisor(v: &StatsView) -> String {
    let pods: Vec<&PodUsage> = v
        .pods
        .iter()
        .filter(|p| p.usage.cpu_seconds_total > 0.0 && p.usage.working_set_bytes > 0)
        .collect();
    let labels = |p: &PodUsage| {
        format!(
            "container=\"{}\",id=\"{}\",image=\"{}\",name=\"{}\",namespace=\"{}\",pod=\"{}\"",
            esc(&p.container),
            esc(&id(p)),
            esc(&p.image),
            esc(&p.vm),
            esc(&p.namespace),
            esc(&p.name)
        )
    };
    let ms = |p: &PodUsage| Some(p.usage.at.as_millisecond());
    let mut out = String::new();
    let name = "container_cpu_usage_seconds_total";
    plain_family(
        &mut out,
        name,
        "counter",
        "Cumulative cpu time consumed in seconds.",
    );
    let cpu = pods.iter().map(|p| {
        let l = format!("{},cpu=\"total\"", labels(p));
        (l, p.usage.cpu_seconds_total, ms(p))
    });
    samples(&mut out, name, cpu);
    for (name, help) in [
        ("container_memory_rss", "Size of RSS in bytes."),
        (
            "container_memory_usage_bytes",
            "Current memory usage in bytes, including all memory regardless of when it was accessed",
        ),
        (
            "container_memory_working_set_bytes",
            "Current working set in bytes.",
        ),
    ] {
        plain_family(&mut out, name, "gauge", help);
        let rows = pods
            .iter()
            .map(|p| (labels(p), p.usage.working_set_bytes, ms(p)));
        samples(&mut out, name, rows);
    }
    let name = "container_spec_memory_limit_bytes";
    plain_family(&mut out, name, "gauge", "Memory limit for the container.");
    let limits = pods
        .iter()
        .filter_map(|p| Some((labels(p), p.memory_limit_bytes?, None)));
    samples(&mut out, name, limits);
    let name = "container_start_time_seconds";
    plain_family(
        &mut out,
        name,
        "gauge",
        "Start time of the container since unix epoch in seconds.",
    );
    let starts = pods.iter().map(|p| (labels(p), p.start.as_second(), None));
    samples(&mut out, name, starts);
    out
}

#[cfg(test)]
mod tests;
