//! Taking and giving back pull tokens (`coordination.k8s.io` Leases in the agent's namespace;
//! the rules are in [`super::tokens`]). A token is renewed while its pull runs and deleted when
//! its guard drops; every API call has a deadline. A Pod's pull never waits on a token; a
//! failure to write one is logged and the pull goes on.

use std::{
    path::PathBuf,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use k8s_openapi::{
    api::coordination::v1::{Lease, LeaseSpec},
    apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta},
    jiff::Timestamp,
};
use kube::{
    Api,
    api::{DeleteParams, ListParams, PostParams},
};
use tokio::task::JoinHandle;
use tracing::{debug, warn};

use super::tokens::{
    IMAGE_LABEL, PullSource, SOURCE_LABEL, Token, admitted, image_key, lease_name,
};
use crate::images::metrics::ImageMetrics;

/// Seconds a token lives after its last renewal: how long a crashed holder blocks others.
pub const TOKEN_SECONDS: i32 = 30;
/// Deadline of measuring a pulled image's size.
const MEASURE_DEADLINE: Duration = Duration::from_secs(10);
/// How often a held token is renewed.
const RENEW_EVERY: Duration = Duration::from_secs(10);

/// Why a pre-pull token could not be taken this time.
#[derive(Debug, thiserror::Error)]
pub enum PacerError {
    /// The API refused or failed.
    #[error("pull token: {0}")]
    Api(#[from] kube::Error),
    /// The API did not answer in time.
    #[error("pull token: the API did not answer within {0:?}")]
    Timeout(Duration),
}

/// Takes tokens for this Node.
#[derive(Clone)]
pub struct Pacer {
    tart_home: PathBuf,
    api: Api<Lease>,
    node: String,
    timeout: Duration,
    metrics: ImageMetrics,
    pod_pulls: Arc<AtomicUsize>,
}

/// A held token: renewed until dropped, then deleted. Also counts the pull in flight.
pub struct TokenGuard {
    tart_home: PathBuf,
    renew: Option<JoinHandle<()>>,
    api: Api<Lease>,
    name: String,
    timeout: Duration,
    source: PullSource,
    metrics: ImageMetrics,
    pod_pulls: Arc<AtomicUsize>,
}

impl Pacer {
    /// Tokens in `namespace`, held in this Node's name; pulled bytes measured in `tart_home`.
    pub fn new(
        tart_home: PathBuf,
        client: kube::Client,
        namespace: &str,
        node: &str,
        timeout: Duration,
        metrics: ImageMetrics,
    ) -> Self {
        Self {
            tart_home,
            api: Api::namespaced(client, namespace),
            node: node.to_owned(),
            timeout,
            metrics,
            pod_pulls: Arc::default(),
        }
    }

    /// Pod pulls running on this Mac now (a pre-pull waits for them).
    pub fn pod_pulls(&self) -> usize {
        self.pod_pulls.load(Ordering::Relaxed)
    }

    /// A Pod's pull of `image`: its token is written in the background; nothing waits.
    pub fn pod_pull(&self, image: &str) -> TokenGuard {
        self.pod_pulls.fetch_add(1, Ordering::Relaxed);
        let name = lease_name(&image_key(image), &self.node);
        let lease = self.lease(&name, image, PullSource::Pod);
        let (api, timeout) = (self.api.clone(), self.timeout);
        let renew = tokio::spawn(async move {
            if let Err(error) = put(&api, &lease, timeout).await {
                warn!(%error, "could not write a Pod pull's token; the pull goes on");
            }
            hold(api, lease.metadata.name.unwrap_or_default(), timeout).await;
        });
        self.guard(name, PullSource::Pod, Some(renew))
    }

    /// A pre-pull of `image`: `Some(guard)` when its token ranks within `cap` (no cap: at once),
    /// `None` when the fleet is at the cap now (the token is given back; try again later).
    ///
    /// # Errors
    /// The token could not be written or the tokens not listed.
    pub async fn try_prepull(
        &self,
        image: &str,
        cap: Option<u32>,
    ) -> Result<Option<TokenGuard>, PacerError> {
        let key = image_key(image);
        let name = lease_name(&key, &self.node);
        let lease = self.lease(&name, image, PullSource::Prepull);
        put(&self.api, &lease, self.timeout).await?;
        if let Some(cap) = cap {
            let lp = ListParams::default().labels(&format!("{IMAGE_LABEL}={key}"));
            let listed = tokio::time::timeout(self.timeout, self.api.list(&lp))
                .await
                .map_err(|_| PacerError::Timeout(self.timeout))??;
            let tokens: Vec<Token> = listed.items.iter().filter_map(Token::of).collect();
            if !admitted(&name, &tokens, cap, Timestamp::now()) {
                debug!(
                    image,
                    cap,
                    holders = tokens.len(),
                    "pre-pull waits for a token"
                );
                self.metrics.token_waits.inc();
                delete(&self.api, &name, self.timeout).await;
                return Ok(None);
            }
        }
        let (api, timeout, held) = (self.api.clone(), self.timeout, name.clone());
        let renew = tokio::spawn(hold(api, held, timeout));
        Ok(Some(self.guard(name, PullSource::Prepull, Some(renew))))
    }

    fn guard(&self, name: String, source: PullSource, renew: Option<JoinHandle<()>>) -> TokenGuard {
        self.metrics.pull_started(source);
        TokenGuard {
            tart_home: self.tart_home.clone(),
            renew,
            api: self.api.clone(),
            name,
            timeout: self.timeout,
            source,
            metrics: self.metrics.clone(),
            pod_pulls: self.pod_pulls.clone(),
        }
    }

    fn lease(&self, name: &str, image: &str, source: PullSource) -> Lease {
        let now = MicroTime(Timestamp::now());
        Lease {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                labels: Some(
                    [
                        (IMAGE_LABEL.to_owned(), image_key(image)),
                        (SOURCE_LABEL.to_owned(), source.as_str().to_owned()),
                    ]
                    .into(),
                ),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(self.node.clone()),
                lease_duration_seconds: Some(TOKEN_SECONDS),
                acquire_time: Some(now.clone()),
                renew_time: Some(now),
                ..LeaseSpec::default()
            }),
        }
    }
}

impl TokenGuard {
    /// The pull of `cache_name` (`host/repo:tag` or `host/repo@sha256:…`) succeeded after
    /// `took`: its duration is observed and the bytes its image takes on disk counted (measured
    /// in the background, bounded).
    pub fn finish(self, took: Duration, cache_name: String) {
        self.metrics.pull_took(self.source, took);
        let (home, metrics, source) = (self.tart_home.clone(), self.metrics.clone(), self.source);
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
        if let Some(r) = self.renew.take() {
            r.abort();
        }
        if self.source == PullSource::Pod {
            self.pod_pulls.fetch_sub(1, Ordering::Relaxed);
        }
        self.metrics.pull_ended(self.source);
        let (api, name, timeout) = (self.api.clone(), self.name.clone(), self.timeout);
        if tokio::runtime::Handle::try_current().is_ok() {
            tokio::spawn(async move { delete(&api, &name, timeout).await });
        }
    }
}

/// Write the token, replacing one a crashed incarnation of this agent left.
async fn put(api: &Api<Lease>, lease: &Lease, timeout: Duration) -> Result<(), PacerError> {
    let create = tokio::time::timeout(timeout, api.create(&PostParams::default(), lease))
        .await
        .map_err(|_| PacerError::Timeout(timeout))?;
    match create {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 409 => {
            let name = lease.metadata.name.clone().unwrap_or_default();
            delete(api, &name, timeout).await;
            tokio::time::timeout(timeout, api.create(&PostParams::default(), lease))
                .await
                .map_err(|_| PacerError::Timeout(timeout))??;
            Ok(())
        }
        Err(e) => Err(e.into()),
    }
}

/// Renew the token every [`RENEW_EVERY`] until aborted.
async fn hold(api: Api<Lease>, name: String, timeout: Duration) {
    loop {
        tokio::time::sleep(RENEW_EVERY).await;
        let patch = serde_json::json!({ "spec": { "renewTime": MicroTime(Timestamp::now()) } });
        let r = tokio::time::timeout(
            timeout,
            api.patch(
                &name,
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(&patch),
            ),
        )
        .await;
        if !matches!(r, Ok(Ok(_))) {
            debug!(token = %name, "could not renew a pull token; trying again");
        }
    }
}

async fn delete(api: &Api<Lease>, name: &str, timeout: Duration) {
    let r = tokio::time::timeout(timeout, api.delete(name, &DeleteParams::default())).await;
    match r {
        Ok(Ok(_)) | Ok(Err(kube::Error::Api(_))) => {}
        _ => debug!(token = %name, "could not delete a pull token; it expires by itself"),
    }
}
