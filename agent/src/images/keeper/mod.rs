//! The image keeper: one task that, every period, measures the OCI cache and the goldens,
//! keeps the disk budget (evicting least recently used digests no Pod here uses) and publishes
//! the inventory the Node's `status.images` is built from.
//!
//! Eviction of a digest removes its golden first, then its tags, then the digest entry itself,
//! each through `tart delete` (Tart's own locks apply). Every eviction is logged and counted.

use std::{
    collections::BTreeSet,
    io,
    path::PathBuf,
    sync::Arc,
    time::{Duration, SystemTime},
};

use tart::{Source, Tart, cache::CachedImage};
use tokio::sync::{Notify, watch};
use tracing::{info, warn};

use super::{
    budget::{Budget, Disk, Entry, Plan, plan},
    golden::{golden_hex, is_golden_of},
    inventory::Held,
    metrics::{ImageMetrics, TriggerLabels},
};
use crate::host::HostInfo;

/// What the keeper measures, behind a seam: the cache on disk and the volume holding it.
pub(crate) trait CacheView: Send + Sync + 'static {
    /// Every cached image (blocking).
    ///
    /// # Errors
    /// The cache cannot be read.
    fn scan(&self) -> io::Result<Vec<CachedImage>>;
    /// The volume's size and free space (blocking).
    ///
    /// # Errors
    /// `statvfs` failed.
    fn disk(&self) -> io::Result<Disk>;
}

/// The real view: `TART_HOME` on this host.
pub(crate) struct TartHomeView {
    pub tart_home: PathBuf,
    /// Host facts (the volume's free space).
    pub host: Arc<dyn HostInfo>,
}

impl CacheView for TartHomeView {
    fn scan(&self) -> io::Result<Vec<CachedImage>> {
        tart::cache::scan(&self.tart_home)
    }
    fn disk(&self) -> io::Result<Disk> {
        let v = self.host.volume(&self.tart_home)?;
        Ok(Disk {
            total_bytes: v.total_bytes,
            free_bytes: v.free_bytes,
        })
    }
}

/// The keeper's settings.
#[derive(Debug, Clone)]
pub(crate) struct KeeperConfig {
    /// Time between passes.
    pub period: Duration,
    /// Thresholds.
    pub budget: Budget,
    /// The agent's VM name prefix (goldens are `<prefix>golden-…`).
    pub prefix: String,
    /// Deadline of one cache scan.
    pub scan_deadline: Duration,
}

/// What one pass found and did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PassReport {
    /// The inventory published.
    pub held: Vec<Held>,
    /// The eviction plan, when the budget was broken.
    pub plan: Option<Plan>,
    /// Digest names evicted.
    pub evicted: Vec<String>,
}

/// Why a pass could not measure.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PassError {
    /// The cache or the volume could not be read.
    #[error("cannot read the image cache: {0}")]
    Scan(#[source] io::Error),
    /// The scan did not finish within its deadline.
    #[error("the image cache scan took longer than {0:?}")]
    Timeout(Duration),
    /// `tart list` failed.
    #[error("tart list failed: {0}")]
    List(#[source] tart::Error),
}

/// The keeper; `in_use` answers the cache names (`host/repo:tag`, `host/repo@sha256:…`) of the
/// images the Pods on this node use, or `None` while that is not known yet (before the Pod
/// watch's first list): nothing is evicted then.
pub(crate) struct Keeper<T, V, U> {
    pub tart: Arc<T>,
    /// The cache view.
    pub view: Arc<V>,
    /// Images in use.
    pub in_use: U,
    pub cfg: KeeperConfig,
    pub metrics: ImageMetrics,
    /// Where the inventory is published.
    pub inventory: watch::Sender<Option<Vec<Held>>>,
    /// Wakes a pass before the period ends (a golden was made).
    pub wake: Arc<Notify>,
}

struct Golden {
    name: tart::VmName,
    hex: String,
    bytes: u64,
    /// Last clone from it (Tart updates a VM's access time when it opens it).
    accessed: Option<SystemTime>,
}

impl<T, V, U> Keeper<T, V, U>
where
    T: Tart,
    V: CacheView,
    U: Fn() -> Option<BTreeSet<String>> + Send + Sync + 'static,
{
    /// Pass every period until `shutdown` turns true; a failed pass is logged and retried next
    /// period.
    pub(crate) async fn run(self, mut shutdown: watch::Receiver<bool>) {
        loop {
            match self.pass().await {
                Ok(r) if !r.evicted.is_empty() => {
                    info!(
                        evicted = r.evicted.len(),
                        "image budget pass evicted digests"
                    );
                }
                Ok(_) => {}
                Err(error) => warn!(%error, "image budget pass failed"),
            }
            tokio::select! {
                () = tokio::time::sleep(self.cfg.period) => {}
                () = self.wake.notified() => {}
                _ = shutdown.wait_for(|s| *s) => return,
            }
        }
    }

    /// One pass: measure, publish, evict.
    ///
    /// # Errors
    /// The cache, the volume or `tart list` could not be read; nothing is evicted then.
    pub(crate) async fn pass(&self) -> Result<PassReport, PassError> {
        let view = self.view.clone();
        let measured = tokio::time::timeout(
            self.cfg.scan_deadline,
            tokio::task::spawn_blocking(move || Ok::<_, io::Error>((view.scan()?, view.disk()?))),
        )
        .await
        .map_err(|_| PassError::Timeout(self.cfg.scan_deadline))?
        .map_err(|e| PassError::Scan(io::Error::other(e)))?;
        let (images, disk) = measured.map_err(PassError::Scan)?;
        let goldens = self.goldens().await?;
        let in_use = (self.in_use)();

        let golden_bytes = |digest: &str| -> u64 {
            goldens
                .iter()
                .filter(|g| is_golden_of(&g.hex, digest))
                .map(|g| g.bytes)
                .sum()
        };
        let held: Vec<Held> = images
            .iter()
            .map(|i| Held {
                digest_name: i.digest_name(),
                tag_names: i.tag_names(),
                bytes: i.bytes + golden_bytes(&i.digest),
            })
            .collect();
        self.metrics
            .cache_bytes
            .set(i64::try_from(held.iter().map(|h| h.bytes).sum::<u64>()).unwrap_or(i64::MAX));
        self.metrics
            .cached_digests
            .set(i64::try_from(images.len()).unwrap_or(i64::MAX));
        self.inventory.send_replace(Some(held.clone()));

        let entries: Vec<Entry> = images
            .iter()
            .zip(&held)
            .map(|(i, h)| Entry {
                key: h.digest_name.clone(),
                bytes: h.bytes,
                // Pods clone the golden, not the cache entry: the later of the two is the
                // digest's last use.
                last_used: goldens
                    .iter()
                    .filter(|g| is_golden_of(&g.hex, &i.digest))
                    .filter_map(|g| g.accessed)
                    .fold(i.accessed, SystemTime::max),
                protected: in_use.as_ref().is_none_or(|u| {
                    u.contains(&h.digest_name) || h.tag_names.iter().any(|t| u.contains(t))
                }),
            })
            .collect();
        let plan = match in_use {
            Some(_) => plan(&self.cfg.budget, disk, &entries),
            None => None,
        };
        let mut evicted = Vec::new();
        if let Some(p) = &plan {
            for key in &p.evict {
                let Some(image) = images.iter().find(|i| &i.digest_name() == key) else {
                    continue;
                };
                let bytes = held
                    .iter()
                    .find(|h| &h.digest_name == key)
                    .map_or(0, |h| h.bytes);
                if self.evict(image, &goldens).await {
                    info!(digest = %key, bytes, trigger = p.trigger.as_str(), "image evicted");
                    self.metrics
                        .evictions
                        .get_or_create(&TriggerLabels {
                            trigger: p.trigger.as_str(),
                        })
                        .inc();
                    self.metrics.evicted_bytes.inc_by(bytes);
                    evicted.push(key.clone());
                }
            }
            if p.shortfall_bytes > 0 {
                warn!(
                    need_bytes = p.need_bytes,
                    shortfall_bytes = p.shortfall_bytes,
                    trigger = p.trigger.as_str(),
                    "the image budget cannot be met: every remaining image is in use"
                );
            }
        }
        Ok(PassReport {
            held,
            plan,
            evicted,
        })
    }

    async fn goldens(&self) -> Result<Vec<Golden>, PassError> {
        let vms = self.tart.list().await.map_err(PassError::List)?;
        Ok(vms
            .into_iter()
            .filter(|v| v.source == Source::Local)
            .filter_map(|v| {
                let hex = golden_hex(&self.cfg.prefix, &v.name)?.to_owned();
                let name = tart::VmName::new(v.name).ok()?;
                // `Size` is what the VM takes on disk, in GB.
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                let bytes = (v.size_gb.max(0.0) * 1e9) as u64;
                let accessed = v
                    .accessed
                    .as_deref()
                    .and_then(|a| a.parse::<k8s_openapi::jiff::Timestamp>().ok())
                    .map(SystemTime::from);
                Some(Golden {
                    name,
                    hex,
                    bytes,
                    accessed,
                })
            })
            .collect())
    }

    /// Remove one digest: its golden, its tags, the digest entry. `false` when any step
    /// failed (the rest is tried again next pass).
    async fn evict(&self, image: &CachedImage, goldens: &[Golden]) -> bool {
        let mut ok = true;
        for g in goldens
            .iter()
            .filter(|g| is_golden_of(&g.hex, &image.digest))
        {
            if let Err(error) = self.tart.delete(&g.name).await {
                warn!(golden = %g.name, %error, "could not delete a golden base");
                ok = false;
            }
        }
        for name in image
            .tag_names()
            .into_iter()
            .chain(std::iter::once(image.digest_name()))
        {
            if let Err(error) = self.tart.delete_image(&name).await {
                warn!(image = %name, %error, "could not delete a cached image");
                ok = false;
            }
        }
        ok
    }
}

#[cfg(test)]
mod tests;
