//! Taking and giving back pull tokens. The tokens this Mac holds are kept here and published
//! on a watch channel; the Node Lease task writes them onto the Node Lease with its next
//! renewal (at once when they change), and drops them when the agent stops (the rules are in
//! [`super::tokens`]). A Pod's pull never waits on a token; every API call has a deadline.

use std::{
    collections::BTreeMap,
    path::PathBuf,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use k8s_openapi::{api::coordination::v1::Lease, jiff::Timestamp};
use kube::{Api, api::ListParams};
use tokio::sync::watch;
use tracing::debug;

use super::tokens::{
    PullSource, Token, Verdict, annotation, annotation_value, image_key, others_live, verdict,
};
use crate::images::metrics::ImageMetrics;

/// Namespace of the Node Leases.
const NODE_LEASES: &str = "kube-node-lease";
/// Deadline of measuring a pulled image's size.
const MEASURE_DEADLINE: Duration = Duration::from_secs(10);
/// How often the Node Leases are listed again while a taken token is not shown yet, or waits for
/// the claims ranked after it to be given back.
const WRITTEN_POLL: Duration = Duration::from_millis(200);

/// Token annotations for the Node Lease (annotation key → value).
pub(crate) type HeldTokens = BTreeMap<String, String>;

/// Tokens this Mac holds by annotation key: the first holder's source and time, and how many
/// pulls hold each.
type Held = BTreeMap<String, (PullSource, Timestamp, usize)>;

/// Why a pre-pull token could not be taken this time.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PacerError {
    /// The API refused or failed.
    #[error("pull token: {0}")]
    Api(#[from] kube::Error),
    /// The API did not answer in time, or the Lease did not show the token in time.
    #[error("pull token: no answer within {0:?}")]
    Timeout(Duration),
}

/// Takes tokens for this Node.
#[derive(Clone)]
pub(crate) struct Pacer {
    tart_home: PathBuf,
    api: Api<Lease>,
    node: String,
    timeout: Duration,
    metrics: ImageMetrics,
    pod_pulls: Arc<AtomicUsize>,
    held: Arc<Mutex<Held>>,
    publish: Arc<watch::Sender<HeldTokens>>,
}

/// A held token: given back (and the pull's in-flight count ended) when dropped.
pub(crate) struct TokenGuard {
    pacer: Pacer,
    key: String,
    source: PullSource,
    /// When the token on the Lease was taken (by this pull or one already holding it).
    acquired: Timestamp,
    /// Whether the pull went on (counted in flight); a claim still being checked is not.
    started: bool,
}

impl Pacer {
    /// Tokens of `node`, published on `publish` for its Node Lease; pulled bytes measured in
    /// `tart_home`.
    pub(crate) fn new(
        tart_home: PathBuf,
        client: kube::Client,
        node: &str,
        timeout: Duration,
        metrics: ImageMetrics,
        publish: watch::Sender<HeldTokens>,
    ) -> Self {
        Self {
            tart_home,
            api: Api::namespaced(client, NODE_LEASES),
            node: node.to_owned(),
            timeout,
            metrics,
            pod_pulls: Arc::default(),
            held: Arc::default(),
            publish: Arc::new(publish),
        }
    }

    /// Pod pulls running on this Mac now (a pre-pull waits for them).
    pub(crate) fn pod_pulls(&self) -> usize {
        self.pod_pulls.load(Ordering::Relaxed)
    }

    /// A Pod's pull of `image`: its token goes onto the Node Lease; nothing waits.
    pub(crate) fn pod_pull(&self, image: &str) -> TokenGuard {
        self.pod_pulls.fetch_add(1, Ordering::Relaxed);
        self.take(image, PullSource::Pod).started()
    }

    /// A pre-pull of `image`: `Some(guard)` when, once its token is on the Lease, fewer than `cap`
    /// other Nodes hold one (no cap: at once); `None` when the fleet is at the cap now (nothing is
    /// held; try again later).
    ///
    /// # Errors
    /// The Node Leases could not be listed, or ours did not show the token in time.
    pub(crate) async fn try_prepull(
        &self,
        image: &str,
        cap: Option<u32>,
    ) -> Result<Option<TokenGuard>, PacerError> {
        let key = image_key(image);
        let Some(cap) = cap else {
            return Ok(Some(self.take(image, PullSource::Prepull).started()));
        };
        // Full already: wait without taking a token at all (saves two Lease writes).
        if others_live(&self.node, &self.tokens(&key).await?, Timestamp::now()) >= cap as usize {
            debug!(image, cap, "pre-pull waits for a token");
            self.metrics.token_waits.inc();
            return Ok(None);
        }
        let guard = self.take(image, PullSource::Prepull);
        // Other agents may be claiming at the same moment: once a list shows our very token on
        // our Lease, every claim written before it is listed beside it (`verdict`).
        let deadline = tokio::time::Instant::now() + self.timeout * 2;
        loop {
            let tokens = self.tokens(&key).await?;
            let v = verdict(&self.node, guard.acquired, &tokens, cap, Timestamp::now());
            match (v, tokio::time::Instant::now() >= deadline) {
                (Verdict::Go, _) => return Ok(Some(guard.started())),
                (Verdict::Unwritten, true) => return Err(PacerError::Timeout(self.timeout * 2)),
                (Verdict::GiveBack, _) | (Verdict::Recheck, true) => {
                    debug!(image, cap, "pre-pull gives its token back");
                    self.metrics.token_waits.inc();
                    return Ok(None);
                }
                (Verdict::Unwritten | Verdict::Recheck, false) => {}
            }
            tokio::time::sleep(WRITTEN_POLL).await;
        }
    }

    /// Live or not, every token for `key` on the Node Leases. The list leaves `resourceVersion`
    /// unset, so the API server reads it from etcd (a consistent read), never from its watch
    /// cache: a stale list could miss a claim written before ours.
    async fn tokens(&self, key: &str) -> Result<Vec<Token>, PacerError> {
        let listed = tokio::time::timeout(self.timeout, self.api.list(&ListParams::default()))
            .await
            .map_err(|_| PacerError::Timeout(self.timeout))??;
        Ok(listed
            .items
            .iter()
            .filter_map(|l| Token::of(l, key))
            .collect())
    }

    fn take(&self, image: &str, source: PullSource) -> TokenGuard {
        let key = annotation(&image_key(image));
        let acquired;
        {
            let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
            let e = held
                .entry(key.clone())
                .or_insert_with(|| (source, Timestamp::now(), 0));
            e.2 += 1;
            acquired = e.1;
            self.publish_held(&held);
        }
        TokenGuard {
            pacer: self.clone(),
            key,
            source,
            acquired,
            started: false,
        }
    }

    fn publish_held(&self, held: &Held) {
        self.publish.send_replace(
            held.iter()
                .map(|(k, &(source, at, _))| (k.clone(), annotation_value(source, at)))
                .collect(),
        );
    }
}

impl TokenGuard {
    /// The pull goes on: counted in flight until the guard drops.
    fn started(mut self) -> Self {
        self.pacer.metrics.pull_started(self.source);
        self.started = true;
        self
    }

    /// The pull of `cache_name` (`host/repo:tag` or `host/repo@sha256:…`) succeeded after
    /// `took`: its duration is observed and the bytes its image takes on disk counted (measured
    /// in the background, bounded).
    pub(crate) fn finish(self, took: Duration, cache_name: String) {
        let metrics = self.pacer.metrics.clone();
        let (home, source) = (self.pacer.tart_home.clone(), self.source);
        metrics.pull_took(source, took);
        tokio::spawn(async move {
            let scan = tokio::task::spawn_blocking(move || tart::cache::scan(&home));
            let Ok(Ok(Ok(images))) = tokio::time::timeout(MEASURE_DEADLINE, scan).await else {
                return;
            };
            if let Some(i) = images
                .iter()
                .find(|i| i.digest_name() == cache_name || i.tag_names().contains(&cache_name))
            {
                metrics.pulled_bytes(source, i.bytes);
            }
        });
    }
}

impl Drop for TokenGuard {
    fn drop(&mut self) {
        let p = &self.pacer;
        if self.source == PullSource::Pod {
            p.pod_pulls.fetch_sub(1, Ordering::Relaxed);
        }
        if self.started {
            p.metrics.pull_ended(self.source);
        }
        let mut held = p.held.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = held.get_mut(&self.key) {
            e.2 = e.2.saturating_sub(1);
            if e.2 == 0 {
                held.remove(&self.key);
            }
        }
        p.publish_held(&held);
    }
}
