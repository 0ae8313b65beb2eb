//! Wiring of the image side: the image keeper (disk budget, `status.images`), the pre-pull task
//! and its pacer, and the golden bases they share with the Pod side. What the Pod side uses is
//! handed back; the tasks are returned for the agent to await on shutdown.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Arc,
    time::Duration,
};

use tart::Tart;
use tokio::{sync::watch, task::JoinHandle};
use tracing::{Instrument, info_span};

use crate::{
    config::Config,
    host::HostInfo,
    images::{
        budget::Budget,
        goldens::Goldens,
        inventory::Held,
        keeper::{Keeper, KeeperConfig, TartHomeView},
        metrics::ImageMetrics,
        prepull::{
            pacer::{HeldTokens, Pacer},
            runner::{PrepullConfig, Prepuller, Progress},
        },
        reference::cache_names,
    },
    node::watch::ObservedNode,
    pods::served::ServedPods,
};

/// Deadline of one scan of the image cache.
const SCAN_DEADLINE: Duration = Duration::from_secs(30);

/// What the image side is started from.
pub(crate) struct ImageDeps<T> {
    pub cfg: Arc<Config>,
    pub tart: Arc<T>,
    /// Host facts (the volume's size).
    pub host: Arc<dyn HostInfo>,
    pub client: kube::Client,
    /// The Pods this agent serves (their images are never evicted).
    pub served: ServedPods,
    pub metrics: ImageMetrics,
    /// Our Node (its labels select the pre-pull images).
    pub node: watch::Receiver<ObservedNode>,
    /// Turns true on shutdown.
    pub shutdown: watch::Receiver<bool>,
    /// Where the pull tokens this Mac holds are published (the Node Lease task writes them).
    pub tokens: watch::Sender<HeldTokens>,
}

/// What the image side hands back.
pub(crate) struct ImageSide {
    pub tasks: Vec<JoinHandle<()>>,
    /// The inventory for `status.images`.
    pub inventory: watch::Receiver<Option<Vec<Held>>>,
    /// Golden bases, for the Pod side.
    pub goldens: Goldens,
    /// Pull tokens, for the Pod side.
    pub pacer: Pacer,
    /// Pre-pull progress, for the Node's `ImagesPrepulled` condition.
    pub prepull: watch::Receiver<Option<Progress>>,
}

/// Start the keeper and the pre-pull task.
pub(crate) fn start<T: Tart>(d: ImageDeps<T>) -> ImageSide {
    let cfg = &d.cfg;
    let goldens = Goldens::new(cfg.vm_naming.prefix());
    let pacer = Pacer::new(
        cfg.tart_home.clone(),
        d.client.clone(),
        &cfg.node_name,
        cfg.api_timeout,
        d.metrics.clone(),
        d.tokens,
    );
    let (inventory_tx, inventory) = watch::channel(None);
    let (wanted_tx, wanted) = watch::channel(BTreeSet::new());
    let (labels_tx, labels) = watch::channel(BTreeMap::new());
    let (progress_tx, progress) = watch::channel(None);

    let total = d.host.volume(&cfg.tart_home).map_or(0, |v| v.total_bytes);
    let served = d.served.clone();
    let keeper = Keeper {
        tart: d.tart.clone(),
        view: Arc::new(TartHomeView {
            tart_home: cfg.tart_home.clone(),
            host: d.host.clone(),
        }),
        in_use: move || {
            let mut names = cache_names(&served.synced_pods()?);
            names.extend(wanted.borrow().iter().cloned());
            Some(names)
        },
        cfg: KeeperConfig {
            period: cfg.image_gc_period,
            budget: Budget {
                high_percent: cfg.image_gc_high_threshold,
                low_percent: cfg.image_gc_low_threshold,
                max_cache_bytes: cfg.image_cache_budget,
                // Keep clear of DiskPressure: its threshold is the floor.
                min_free_bytes: cfg.disk_pressure.min_free(total),
            },
            prefix: cfg.vm_naming.prefix().to_owned(),
            scan_deadline: SCAN_DEADLINE,
        },
        metrics: d.metrics.clone(),
        inventory: inventory_tx,
        wake: goldens.made(),
    };
    let prepuller = Prepuller {
        tart: d.tart.clone(),
        client: d.client.clone(),
        cfg: PrepullConfig {
            namespace: cfg.prepull_namespace.clone(),
            name: cfg.prepull_name.clone(),
            period: cfg.prepull_period,
            api_timeout: cfg.api_timeout,
        },
        pacer: pacer.clone(),
        goldens: goldens.clone(),
        node_labels: labels,
        wanted: wanted_tx,
        progress: progress_tx,
        metrics: d.metrics.clone(),
    };
    let mut node = d.node.clone();
    let labels_task = async move {
        loop {
            if let Some(n) = node.borrow_and_update().node() {
                labels_tx.send_if_modified(|l| {
                    let new = n.metadata.labels.clone().unwrap_or_default();
                    let changed = *l != new;
                    *l = new;
                    changed
                });
            }
            if node.changed().await.is_err() {
                return;
            }
        }
    };
    let tasks = vec![
        tokio::spawn(
            keeper
                .run(d.shutdown.clone())
                .instrument(info_span!("images")),
        ),
        tokio::spawn(
            prepuller
                .run(d.shutdown.clone())
                .instrument(info_span!("prepull")),
        ),
        tokio::spawn(labels_task),
    ];
    ImageSide {
        tasks,
        inventory,
        goldens,
        pacer,
        prepull: progress,
    }
}
