//! The pre-pull task. Every period, and at once when the operators' declaration changes (it
//! is watched: [`super::watched`]), it passes over the declaration: for each image
//! declared for this Node that the Mac does not hold yet — one at a time, and never while a
//! Pod's own pull runs here — takes a fleet token, pulls, makes the golden base, and gives the
//! token back. What it wants is published so the disk budget never evicts it; its progress is
//! published for the Node's status and counted in `tart_kubelet_prepull_images{state}`.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Arc,
    time::Duration,
};

use k8s_openapi::api::core::v1::Node;
use kube::{Api, api::ListParams};
use tart::Tart;
use tokio::{sync::watch, time::Instant};
use tracing::{info, warn};

use super::{
    declaration::{Declaration, Wanted},
    pacer::Pacer,
    watched::Watched,
};
use crate::images::{
    goldens::Goldens,
    metrics::{ImageMetrics, PREPULL_STATES, StateLabels},
    reference::ImageRef,
};

/// Where a declared image stands on this Mac.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PrepullState {
    /// Cached, with its golden base.
    Ready,
    /// Waiting for a fleet token or for this Mac's Pod pulls.
    Waiting,
    /// Being pulled.
    Pulling,
    /// The last attempt failed (retried next period).
    Failed,
}

impl PrepullState {
    /// Metric label value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Ready => "ready",
            Self::Waiting => "waiting",
            Self::Pulling => "pulling",
            Self::Failed => "failed",
        }
    }
}

/// The declared images for this Node and where each stands.
pub(crate) type Progress = Vec<(String, PrepullState)>;

/// Settings.
#[derive(Debug, Clone)]
pub(crate) struct PrepullConfig {
    /// Namespace of the declaration and the tokens.
    pub namespace: String,
    /// The declaration ConfigMap's name.
    pub name: String,
    /// Time between passes (sooner while an image waits for a token); a change of the
    /// declaration starts one at once.
    pub period: Duration,
    /// Deadline of each API call.
    pub api_timeout: Duration,
}

/// The task.
pub(crate) struct Prepuller<T> {
    pub tart: Arc<T>,
    pub client: kube::Client,
    pub cfg: PrepullConfig,
    /// Fleet tokens.
    pub pacer: Pacer,
    /// Golden bases (shared with the Pod side).
    pub goldens: Goldens,
    /// This Node's labels, as the Node watch sees them.
    pub node_labels: watch::Receiver<BTreeMap<String, String>>,
    /// Cache names of the images wanted here (the disk budget keeps them).
    pub wanted: watch::Sender<BTreeSet<String>>,
    /// Progress, for the Node's status (`None` until the declaration was first read).
    pub progress: watch::Sender<Option<Progress>>,
    pub metrics: ImageMetrics,
}

/// Retry delay while an image waits for a token.
const WAITING_RETRY: Duration = Duration::from_secs(3);

impl<T: Tart> Prepuller<T> {
    /// Pass every period, and when the declaration changes, until `shutdown` turns true.
    pub(crate) async fn run(self, mut shutdown: watch::Receiver<bool>) {
        let mut declared = Watched::start(self.client.clone(), &self.cfg.namespace, &self.cfg.name);
        tokio::select! {
            () = declared.listed() => {}
            _ = shutdown.wait_for(|s| *s) => return,
        }
        let mut last: Option<Declaration> = None;
        let mut said: Option<String> = None;
        loop {
            match declared.current() {
                Ok(d) => {
                    last = Some(d);
                    said = None;
                }
                Err(e) => {
                    let e = e.to_string();
                    if said.as_ref() != Some(&e) {
                        warn!(error = %e, config = %self.cfg.name, "pre-pull declaration not used; keeping the last good one");
                        said = Some(e);
                    }
                }
            }
            let waiting = match &last {
                Some(d) => self.pass(d, &mut shutdown).await,
                None => false,
            };
            let wait = if waiting {
                WAITING_RETRY.min(self.cfg.period)
            } else {
                self.cfg.period
            };
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = declared.changed() => {}
                _ = shutdown.wait_for(|s| *s) => return,
            }
        }
    }

    /// One pass over the images declared for this Node; `true` when one waits for a token.
    async fn pass(&self, d: &Declaration, shutdown: &mut watch::Receiver<bool>) -> bool {
        let labels = self.node_labels.borrow().clone();
        let wanted: Vec<Wanted> = d.wanted_by(&labels).into_iter().cloned().collect();
        let refs: Vec<(String, Result<ImageRef, String>)> = wanted
            .iter()
            .map(|w| {
                (
                    w.image.clone(),
                    ImageRef::parse(&w.image).map_err(|e| e.to_string()),
                )
            })
            .collect();
        self.wanted.send_replace(
            refs.iter()
                .filter_map(|(_, r)| r.as_ref().ok().map(ImageRef::cache_name))
                .collect(),
        );
        let mut progress: Progress = Vec::new();
        let mut waiting = false;
        for (w, (image, parsed)) in wanted.iter().zip(&refs) {
            if *shutdown.borrow() {
                break;
            }
            let state = match parsed {
                Err(why) => {
                    warn!(image, %why, "pre-pull image is not usable");
                    PrepullState::Failed
                }
                Ok(r) => {
                    let state = self.one(d, w, r, &progress).await;
                    waiting |= state == PrepullState::Waiting;
                    state
                }
            };
            progress.push((image.clone(), state));
            self.publish(&progress);
        }
        self.publish(&progress);
        waiting
    }

    fn publish(&self, progress: &Progress) {
        for s in PREPULL_STATES {
            let n = progress.iter().filter(|(_, p)| p.as_str() == s).count();
            self.metrics
                .prepull_images
                .get_or_create(&StateLabels { state: s })
                .set(i64::try_from(n).unwrap_or(i64::MAX));
        }
        self.progress.send_replace(Some(progress.clone()));
    }

    /// Bring one image to Ready if this Mac may now.
    async fn one(
        &self,
        d: &Declaration,
        w: &Wanted,
        r: &ImageRef,
        done: &Progress,
    ) -> PrepullState {
        if let Some(digest) = self.digest(r).await {
            return self.golden(r, &digest).await;
        }
        if self.pacer.pod_pulls() > 0 {
            return PrepullState::Waiting;
        }
        let cap = match d.cap(1) {
            None => None,
            Some(_) => match self.matching_nodes(w).await {
                Some(n) => d.cap(n),
                None => return PrepullState::Waiting,
            },
        };
        let guard = match self.pacer.try_prepull(r.as_str(), cap).await {
            Ok(Some(g)) => g,
            Ok(None) => return PrepullState::Waiting,
            Err(error) => {
                warn!(image = %r, %error, "pre-pull could not take a token");
                return PrepullState::Waiting;
            }
        };
        let mut now = done.clone();
        now.push((r.to_string(), PrepullState::Pulling));
        self.publish(&now);
        info!(image = %r, ?cap, "pre-pulling");
        let started = Instant::now();
        match self.tart.pull(r.as_str(), None).await {
            Ok(()) => {
                guard.finish(started.elapsed(), r.cache_name());
                info!(image = %r, took_s = started.elapsed().as_secs(), "pre-pulled");
                match self.digest(r).await {
                    Some(digest) => self.golden(r, &digest).await,
                    None => PrepullState::Ready,
                }
            }
            Err(error) => {
                drop(guard);
                warn!(image = %r, %error, "pre-pull failed; retried next period");
                PrepullState::Failed
            }
        }
    }

    /// The digest of a cached image, `None` when it is not cached.
    async fn digest(&self, r: &ImageRef) -> Option<String> {
        match &r.digest {
            Some(d) => {
                let cached = self.tart.list().await.ok()?;
                cached
                    .iter()
                    .any(|v| v.name == r.cache_name())
                    .then(|| d.clone())
            }
            None => {
                let tag = r.tag.as_deref().unwrap_or("latest");
                self.tart.cached_digest(&r.host, &r.repository, tag).await
            }
        }
    }

    async fn golden(&self, r: &ImageRef, digest: &str) -> PrepullState {
        let source = format!("{}/{}@{digest}", r.host, r.repository);
        match self
            .goldens
            .ensure(self.tart.clone(), &source, digest, None)
            .await
        {
            Ok(_) => PrepullState::Ready,
            Err(f) => {
                warn!(image = %r, kind = f.kind.as_str(), message = %f.message, "pre-pull could not make the golden base");
                PrepullState::Failed
            }
        }
    }

    /// How many Nodes the entry is declared for (its selector over every Node).
    async fn matching_nodes(&self, w: &Wanted) -> Option<u32> {
        let api: Api<Node> = Api::all(self.client.clone());
        let selector: Vec<String> = w
            .node_selector
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let lp = ListParams::default().labels(&selector.join(","));
        match tokio::time::timeout(self.cfg.api_timeout, api.list_metadata(&lp)).await {
            Ok(Ok(l)) => Some(u32::try_from(l.items.len()).unwrap_or(u32::MAX)),
            Ok(Err(error)) => {
                warn!(%error, "cannot count the Nodes a pre-pull image is declared for");
                None
            }
            Err(_) => None,
        }
    }
}
