//! Image metrics (prefix `tart_kubelet_`): golden hits and misses, the disk budget's evictions,
//! and what the cache holds. Labels come only from [`GoldenResult`] and [`Trigger`].

use std::time::Duration;

use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{counter::Counter, family::Family, gauge::Gauge, histogram::Histogram},
    registry::Registry,
};

use super::{budget::Trigger, goldens::GoldenResult, prepull::tokens::PullSource};
use crate::metrics::register;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct ResultLabels {
    /// [`GoldenResult::as_str`].
    pub result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct TriggerLabels {
    /// [`Trigger::as_str`].
    pub trigger: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct SourceLabels {
    /// [`PullSource::as_str`].
    pub source: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct StateLabels {
    /// A pre-pull image's state.
    pub state: &'static str,
}

fn pull_histogram() -> Histogram {
    Histogram::new([
        1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0, 1800.0, 3600.0, 7200.0, 14400.0,
    ])
}

/// The image metrics; cheap to clone.
#[derive(Clone, Debug)]
pub(crate) struct ImageMetrics {
    /// `image_pulls_in_flight{source}`.
    pub pulls_in_flight: Family<SourceLabels, Gauge>,
    /// `image_pull_duration_seconds{source}`: pulls that finished.
    pub pull_duration: Family<SourceLabels, Histogram>,
    /// `image_pull_bytes_total{source}`: bytes on disk of the images pulled.
    pub pull_bytes: Family<SourceLabels, Counter>,
    /// `prepull_token_waits_total`: pre-pulls that found the fleet at its cap and waited.
    pub token_waits: Counter,
    /// `prepull_images{state}`: the images declared for this Node, by state.
    pub prepull_images: Family<StateLabels, Gauge>,
    /// `golden_bases_total{result}`: a Pod's clone source looked up (hit, miss, error).
    pub golden: Family<ResultLabels, Counter>,
    /// `image_evictions_total{trigger}`: digests the disk budget removed.
    pub evictions: Family<TriggerLabels, Counter>,
    /// `image_evicted_bytes_total`.
    pub evicted_bytes: Counter,
    /// `image_cache_bytes`: the OCI cache and goldens on disk.
    pub cache_bytes: Gauge,
    /// `image_cache_digests`: digests cached.
    pub cached_digests: Gauge,
}

impl Default for ImageMetrics {
    fn default() -> Self {
        Self {
            pulls_in_flight: Family::default(),
            pull_duration: Family::new_with_constructor(pull_histogram),
            pull_bytes: Family::default(),
            token_waits: Counter::default(),
            prepull_images: Family::default(),
            golden: Family::default(),
            evictions: Family::default(),
            evicted_bytes: Counter::default(),
            cache_bytes: Gauge::default(),
            cached_digests: Gauge::default(),
        }
    }
}

/// `state` values of `prepull_images`.
pub(crate) const PREPULL_STATES: [&str; 4] = ["ready", "waiting", "pulling", "failed"];

impl ImageMetrics {
    /// Create the metrics and register them under `tart_kubelet_`.
    pub(crate) fn register(registry: &mut Registry) -> Self {
        let m = Self::default();
        let r = registry.sub_registry_with_prefix("tart_kubelet");
        register!(r;
            "golden_bases", "Pod clones by where their golden base came from (hit, miss: made now, error: cloned from the image)" => m.golden;
            "image_evictions", "Image digests removed by the disk budget, by trigger (disk_high, cache_budget, free_floor)" => m.evictions;
            "image_evicted_bytes", "Bytes freed by the disk budget" => m.evicted_bytes;
            "image_cache_bytes", "Bytes the OCI cache and the golden bases take on disk" => m.cache_bytes;
            "image_cache_digests", "Image digests in the OCI cache" => m.cached_digests;
            "image_pulls_in_flight", "Image pulls running on this Mac, by source (pod, prepull)" => m.pulls_in_flight;
            "image_pull_duration_seconds", "Duration of finished image pulls, by source (pod, prepull)" => m.pull_duration;
            "image_pull_bytes", "Bytes on disk of the images pulled, by source (pod, prepull)" => m.pull_bytes;
            "prepull_token_waits", "Pre-pulls that found the fleet at its concurrent-pull cap and waited" => m.token_waits;
            "prepull_images", "Images declared for this Node, by state (ready, waiting, pulling, failed)" => m.prepull_images;
        );
        for s in PullSource::ALL {
            let l = SourceLabels { source: s.as_str() };
            let _ = m.pulls_in_flight.get_or_create(&l);
            let _ = m.pull_duration.get_or_create(&l);
            let _ = m.pull_bytes.get_or_create(&l);
        }
        for state in PREPULL_STATES {
            let _ = m.prepull_images.get_or_create(&StateLabels { state });
        }
        for g in GoldenResult::ALL {
            let _ = m.golden.get_or_create(&ResultLabels { result: g.as_str() });
        }
        for t in Trigger::ALL {
            let _ = m.evictions.get_or_create(&TriggerLabels {
                trigger: t.as_str(),
            });
        }
        m
    }

    /// A pull of `source` started.
    pub(crate) fn pull_started(&self, source: PullSource) {
        self.pulls_in_flight
            .get_or_create(&SourceLabels {
                source: source.as_str(),
            })
            .inc();
    }

    /// A pull of `source` ended (however).
    pub(crate) fn pull_ended(&self, source: PullSource) {
        self.pulls_in_flight
            .get_or_create(&SourceLabels {
                source: source.as_str(),
            })
            .dec();
    }

    /// A pull of `source` finished after `took`.
    pub(crate) fn pull_took(&self, source: PullSource, took: Duration) {
        self.pull_duration
            .get_or_create(&SourceLabels {
                source: source.as_str(),
            })
            .observe(took.as_secs_f64());
    }

    /// A pull of `source` brought `bytes` onto the disk.
    pub(crate) fn pulled_bytes(&self, source: PullSource, bytes: u64) {
        self.pull_bytes
            .get_or_create(&SourceLabels {
                source: source.as_str(),
            })
            .inc_by(bytes);
    }

    /// A Pod's clone source was found.
    pub(crate) fn golden(&self, r: GoldenResult) {
        self.golden
            .get_or_create(&ResultLabels { result: r.as_str() })
            .inc();
    }
}
