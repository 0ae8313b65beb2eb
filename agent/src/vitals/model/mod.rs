//! What the sampler records: host samples, per-VM samples from the host's side, the guest's
//! own samples, and the bounded history of each. Plain data; no I/O.

use std::collections::{BTreeMap, VecDeque};

use k8s_openapi::jiff::Timestamp;

/// Samples kept per series.
pub(crate) const HISTORY: usize = 30;

/// macOS's memory pressure level in its dispatch encoding
/// (docs/reference/host-and-conventions.md §3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum PressureLevel {
    Normal,
    Warning,
    Critical,
}

impl PressureLevel {
    /// From `kern.memorystatus_vm_pressure_level`: 1, 2 or 4; anything else is unknown.
    pub(crate) fn from_level(n: u32) -> Option<Self> {
        match n {
            1 => Some(Self::Normal),
            2 => Some(Self::Warning),
            4 => Some(Self::Critical),
            _ => None,
        }
    }

    /// The dispatch value (1, 2, 4): the gauge's value.
    pub(crate) fn level(self) -> u32 {
        match self {
            Self::Normal => 1,
            Self::Warning => 2,
            Self::Critical => 4,
        }
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Normal => "normal",
            Self::Warning => "warning",
            Self::Critical => "critical",
        }
    }
}

/// One look at the host's memory and disk. A field is `None` when its source failed.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct HostSample {
    pub at: Option<Timestamp>,
    pub pressure: Option<PressureLevel>,
    /// What `memory_pressure` calls the free percentage.
    pub free_percent: Option<u8>,
    pub swap_used_bytes: Option<u64>,
    /// Free space of the `TART_HOME` volume.
    pub disk_free_bytes: Option<u64>,
    /// Bytes of memory in use (physical memory less what is available), for the node summary.
    pub memory_used_bytes: Option<u64>,
    /// Cumulative CPU time of the whole host, for the node summary.
    pub cpu_seconds_total: Option<f64>,
}

/// One look at a VM's processes from the host.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct VmSample {
    pub at: Timestamp,
    /// Cumulative CPU time of the VM's processes.
    pub cpu_seconds_total: f64,
    /// CPU use since the previous sample, in cores; `None` for the first sample.
    pub cpu_cores: Option<f64>,
    /// Resident memory of the VM's processes.
    pub rss_bytes: u64,
}

/// One line the guest launcher wrote (docs/guest.md, "Vitals"). Empty fields are `None`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct GuestSample {
    /// Guest time, Unix seconds.
    pub ts: Option<i64>,
    pub pressure: Option<PressureLevel>,
    pub free_percent: Option<u8>,
    pub page_size: Option<u64>,
    pub free_pages: Option<u64>,
    pub active_pages: Option<u64>,
    pub wired_pages: Option<u64>,
    pub compressed_pages: Option<u64>,
    pub swap_used_bytes: Option<u64>,
    pub load_1m: Option<f64>,
    pub disk_used_percent: Option<u8>,
    /// Jetsam (out-of-memory) kills seen since the launcher started.
    pub jetsam_kills: Option<u64>,
}

impl GuestSample {
    /// Whether every field but the timestamp is missing: a sample whose sources all failed.
    pub(crate) fn is_empty(&self) -> bool {
        *self
            == GuestSample {
                ts: self.ts,
                ..GuestSample::default()
            }
    }
}

/// A bounded series, oldest first.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Series<S>(VecDeque<S>);

impl<S> Default for Series<S> {
    fn default() -> Self {
        Self(VecDeque::new())
    }
}

impl<S> Series<S> {
    /// Appends `s`, dropping the oldest past [`HISTORY`].
    pub(crate) fn push(&mut self, s: S) {
        if self.0.len() == HISTORY {
            self.0.pop_front();
        }
        self.0.push_back(s);
    }

    pub(crate) fn last(&self) -> Option<&S> {
        self.0.back()
    }

    pub(crate) fn iter(&self) -> impl DoubleEndedIterator<Item = &S> {
        self.0.iter()
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// The newest `n` samples, oldest first.
    pub(crate) fn tail(&self, n: usize) -> Vec<S>
    where
        S: Clone,
    {
        self.0
            .iter()
            .skip(self.0.len().saturating_sub(n))
            .cloned()
            .collect()
    }
}

impl<S> FromIterator<S> for Series<S> {
    fn from_iter<I: IntoIterator<Item = S>>(iter: I) -> Self {
        let mut s = Series::default();
        for x in iter {
            s.push(x);
        }
        s
    }
}

/// Everything one VM's history holds.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct VmVitals {
    /// When the sampler first saw the VM's processes.
    pub first_seen: Option<Timestamp>,
    pub host: Series<VmSample>,
    pub guest: Series<GuestSample>,
}

/// The sampler's state after a tick: what the handle hands out.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Snapshot {
    pub host: Series<HostSample>,
    /// By VM name; a VM drops out once its processes are gone and it was not seen for a tick.
    pub vms: BTreeMap<String, VmVitals>,
}

#[cfg(test)]
mod tests;
