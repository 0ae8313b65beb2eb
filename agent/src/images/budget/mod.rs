//! The disk budget the agent keeps for cached images and their goldens, in kubelet's image-GC
//! shape: when the volume's use reaches the high threshold, free down to the low one; also
//! keep the cache within a byte budget and the volume above a free-space floor. Least recently
//! used digests go first, and never one that is protected (used by a Pod on this node, or wanted
//! by the pre-pull set). Pure: the caller measures, this decides.

use std::time::SystemTime;

/// Thresholds, from the configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Budget {
    /// Volume use (percent) at which eviction starts.
    pub high_percent: u8,
    /// Volume use (percent) eviction frees down to.
    pub low_percent: u8,
    /// Most bytes the cache and goldens may take, if bounded.
    pub max_cache_bytes: Option<u64>,
    /// Free bytes the volume must keep.
    pub min_free_bytes: u64,
}

/// The volume holding `TART_HOME`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Disk {
    /// Its size.
    pub total_bytes: u64,
    /// Bytes available.
    pub free_bytes: u64,
}

/// One digest the budget may evict: its OCI cache entry and its golden, together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    /// `sha256:<hex>`, with the repository it came from: the unit of eviction.
    pub key: String,
    /// Bytes on disk (cache entry and golden).
    pub bytes: u64,
    /// When it was last used.
    pub last_used: SystemTime,
    /// Used by a Pod here or wanted by pre-pull: never evicted.
    pub protected: bool,
}

/// Why the budget frees space (a metric label).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Trigger {
    /// Volume use at or past the high threshold.
    DiskHigh,
    /// Cache past its byte budget.
    CacheBudget,
    /// Free space under the floor.
    FreeFloor,
}

impl Trigger {
    /// Every trigger, for metric label sets.
    pub(crate) const ALL: [Self; 3] = [Self::DiskHigh, Self::CacheBudget, Self::FreeFloor];

    /// Metric label value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::DiskHigh => "disk_high",
            Self::CacheBudget => "cache_budget",
            Self::FreeFloor => "free_floor",
        }
    }
}

/// What to evict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plan {
    /// The trigger that asks for the most bytes.
    pub trigger: Trigger,
    /// Bytes to free.
    pub need_bytes: u64,
    /// Keys to evict, in order (least recently used first).
    pub evict: Vec<String>,
    /// Bytes still missing once every unprotected digest is gone (0 when the plan suffices).
    pub shortfall_bytes: u64,
}

/// Bytes each trigger asks to free; the largest wins.
fn need(budget: &Budget, disk: Disk, cache_bytes: u64) -> Option<(Trigger, u64)> {
    let used = disk.total_bytes.saturating_sub(disk.free_bytes);
    let percent = |p: u8| u128::from(disk.total_bytes) * u128::from(p.min(100)) / 100;
    let mut wants = Vec::new();
    if disk.total_bytes > 0 && u128::from(used) >= percent(budget.high_percent) {
        let low = u64::try_from(percent(budget.low_percent)).unwrap_or(u64::MAX);
        wants.push((Trigger::DiskHigh, used.saturating_sub(low)));
    }
    if let Some(max) = budget.max_cache_bytes
        && cache_bytes > max
    {
        wants.push((Trigger::CacheBudget, cache_bytes - max));
    }
    if disk.free_bytes < budget.min_free_bytes {
        wants.push((Trigger::FreeFloor, budget.min_free_bytes - disk.free_bytes));
    }
    wants
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .max_by_key(|(t, n)| (*n, std::cmp::Reverse(*t)))
}

/// The eviction plan, or `None` when the budget is kept.
pub(crate) fn plan(budget: &Budget, disk: Disk, entries: &[Entry]) -> Option<Plan> {
    let cache_bytes = entries.iter().map(|e| e.bytes).sum();
    let (trigger, need_bytes) = need(budget, disk, cache_bytes)?;
    let mut candidates: Vec<&Entry> = entries.iter().filter(|e| !e.protected).collect();
    candidates.sort_by(|a, b| a.last_used.cmp(&b.last_used).then(a.key.cmp(&b.key)));
    let mut freed = 0u64;
    let mut evict = Vec::new();
    for e in candidates {
        if freed >= need_bytes {
            break;
        }
        freed = freed.saturating_add(e.bytes);
        evict.push(e.key.clone());
    }
    Some(Plan {
        trigger,
        need_bytes,
        evict,
        shortfall_bytes: need_bytes.saturating_sub(freed),
    })
}

#[cfg(test)]
mod tests;
