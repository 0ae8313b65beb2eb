//! Vitals metrics (prefix `tart_kubelet_`): the host's memory pressure, free memory and swap,
//! the running VMs' summed CPU and resident memory, sample counts, and deaths by cause. No
//! Pod or VM names in labels: every label value comes from a closed set.

use std::sync::atomic::AtomicU64;

use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{counter::Counter, family::Family, gauge::Gauge},
    registry::Registry,
};

use super::death::DeathCause;
use crate::metrics::register;

/// Where a sample comes from (`source` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Source {
    /// The host's tools, seen from the agent.
    Host,
    /// The guest launcher's `vitals` lines.
    Guest,
}

impl Source {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Host => "host",
            Self::Guest => "guest",
        }
    }
}

/// `vitals_samples_total` labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct SampleLabels {
    /// [`Source::as_str`].
    pub source: &'static str,
    /// `ok` or `error`.
    pub result: &'static str,
}

/// `vm_deaths_total` labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct CauseLabels {
    /// [`DeathCause::as_str`].
    pub cause: &'static str,
}

/// The vitals metrics. Clones share the same series.
#[derive(Clone, Debug, Default)]
pub(crate) struct VitalsMetrics {
    pub pressure_level: Gauge,
    pub free_percent: Gauge,
    pub swap_used_bytes: Gauge,
    pub vms_cpu_cores: Gauge<f64, AtomicU64>,
    pub vms_rss_bytes: Gauge,
    pub samples: Family<SampleLabels, Counter>,
    pub deaths: Family<CauseLabels, Counter>,
}

impl VitalsMetrics {
    /// Registers every series, the closed label sets pre-created.
    pub(crate) fn register(registry: &mut Registry) -> Self {
        let m = Self::default();
        let r = registry.sub_registry_with_prefix("tart_kubelet");
        register!(r;
            "host_memory_pressure_level", "Host memory pressure: 1 normal, 2 warning, 4 critical" => m.pressure_level;
            "host_memory_free_percent", "Host memory free percentage, as memory_pressure reports it" => m.free_percent;
            "host_swap_used_bytes", "Host swap in use" => m.swap_used_bytes;
            "vms_cpu_usage_cores", "CPU used by the running VMs' processes, in cores, summed" => m.vms_cpu_cores;
            "vms_memory_resident_bytes", "Resident memory of the running VMs' processes, summed" => m.vms_rss_bytes;
            "vitals_samples", "Vitals samples taken, by source and result" => m.samples;
            "vm_deaths", "Abnormal ends of a job's VM, by cause" => m.deaths;
        );
        for source in [Source::Host, Source::Guest] {
            for result in ["ok", "error"] {
                let _ = m.samples.get_or_create(&SampleLabels {
                    source: source.as_str(),
                    result,
                });
            }
        }
        for cause in DeathCause::ALL {
            let _ = m.deaths.get_or_create(&CauseLabels {
                cause: cause.as_str(),
            });
        }
        m
    }

    /// Counts one sample.
    pub(crate) fn sample(&self, source: Source, ok: bool) {
        let result = if ok { "ok" } else { "error" };
        self.samples
            .get_or_create(&SampleLabels {
                source: source.as_str(),
                result,
            })
            .inc();
    }

    /// Counts one death.
    pub(crate) fn death(&self, cause: DeathCause) {
        self.deaths
            .get_or_create(&CauseLabels {
                cause: cause.as_str(),
            })
            .inc();
    }
}

#[cfg(test)]
mod tests;
