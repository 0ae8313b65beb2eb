//! Image metrics (prefix `tart_kubelet_`): golden hits and misses, the disk budget's evictions,
//! and what the cache holds. Labels come only from [`GoldenResult`] and [`Trigger`].

use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{counter::Counter, family::Family, gauge::Gauge},
    registry::Registry,
};

use super::{budget::Trigger, goldens::GoldenResult};
use crate::metrics::register;

/// `result` label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabels {
    /// [`GoldenResult::as_str`].
    pub result: &'static str,
}

/// `trigger` label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TriggerLabels {
    /// [`Trigger::as_str`].
    pub trigger: &'static str,
}

/// The image metrics; cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct ImageMetrics {
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

impl ImageMetrics {
    /// Create the metrics and register them under `tart_kubelet_`.
    pub fn register(registry: &mut Registry) -> Self {
        let m = Self::default();
        let r = registry.sub_registry_with_prefix("tart_kubelet");
        register!(r;
            "golden_bases", "Pod clones by where their golden base came from (hit, miss: made now, error: cloned from the image)" => m.golden;
            "image_evictions", "Image digests removed by the disk budget, by trigger (disk_high, cache_budget, free_floor)" => m.evictions;
            "image_evicted_bytes", "Bytes freed by the disk budget" => m.evicted_bytes;
            "image_cache_bytes", "Bytes the OCI cache and the golden bases take on disk" => m.cache_bytes;
            "image_cache_digests", "Image digests in the OCI cache" => m.cached_digests;
        );
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

    /// A Pod's clone source was found.
    pub fn golden(&self, r: GoldenResult) {
        self.golden
            .get_or_create(&ResultLabels { result: r.as_str() })
            .inc();
    }
}
