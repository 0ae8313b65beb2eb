//! Making golden base VMs: single-flight per golden, so two Pods of one new digest share one
//! `tart clone` from the cache, and a golden that failed half-way is deleted rather than left
//! for a Pod to clone from. `tart clone` itself is atomic (it copies into `tmp/` and swaps the
//! directory in, docs/reference/tart-cli.md §2.2), so a golden that exists is whole.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use futures::{FutureExt, future::Shared};
use tart::{Credentials, ErrorKind, Source, Tart, VmName};
use tokio::sync::Notify;
use tracing::{info, warn};

use super::golden::golden_name;

/// How the golden for a Pod was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GoldenResult {
    /// It existed.
    Hit,
    /// It was cloned from the cache now.
    Miss,
    /// It could not be made; the Pod clones from the image instead.
    Error,
}

impl GoldenResult {
    /// Every result, for metric label sets.
    pub(crate) const ALL: [Self; 3] = [Self::Hit, Self::Miss, Self::Error];

    /// Metric label value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Hit => "hit",
            Self::Miss => "miss",
            Self::Error => "error",
        }
    }
}

/// A golden that could not be made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GoldenFailure {
    /// Classification of tart's error.
    pub kind: ErrorKind,
    /// tart's message.
    pub message: String,
}

type Making = Shared<futures::future::BoxFuture<'static, Result<GoldenResult, GoldenFailure>>>;

/// Goldens being made, by name.
#[derive(Clone)]
pub(crate) struct Goldens {
    prefix: String,
    inflight: Arc<Mutex<HashMap<VmName, Making>>>,
    made: Arc<Notify>,
}

impl Goldens {
    /// Goldens named with the agent's VM prefix.
    pub(crate) fn new(prefix: impl Into<String>) -> Self {
        Self {
            prefix: prefix.into(),
            inflight: Arc::default(),
            made: Arc::default(),
        }
    }

    /// Notified each time a golden is made (the image keeper measures again at once, so
    /// `status.images` lists a new image without waiting for its period).
    pub(crate) fn made(&self) -> Arc<Notify> {
        self.made.clone()
    }

    /// The golden VM for `digest`, made from `source` (the image's digest name,
    /// `host/repository@sha256:<hex>`) if it does not exist yet.
    ///
    /// # Errors
    /// The digest is not a sha256 digest, or `tart list`/`tart clone` failed.
    pub(crate) async fn ensure<T: Tart>(
        &self,
        tart: Arc<T>,
        source: &str,
        digest: &str,
        creds: Option<Credentials>,
    ) -> Result<(VmName, GoldenResult), GoldenFailure> {
        let Some(name) = golden_name(&self.prefix, digest) else {
            return Err(GoldenFailure {
                kind: ErrorKind::Usage,
                message: format!("{digest:?} is not a sha256 digest"),
            });
        };
        let fut = {
            let mut map = self
                .inflight
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            map.entry(name.clone())
                .or_insert_with(|| {
                    let (name, source) = (name.clone(), source.to_owned());
                    let inflight = self.inflight.clone();
                    let made = self.made.clone();
                    let task = tokio::spawn(async move {
                        let r = make(tart.as_ref(), &name, &source, creds.as_ref()).await;
                        if r == Ok(GoldenResult::Miss) {
                            made.notify_one();
                        }
                        inflight
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner)
                            .remove(&name);
                        r
                    });
                    async move {
                        task.await.unwrap_or_else(|e| {
                            Err(GoldenFailure {
                                kind: ErrorKind::Other,
                                message: format!("golden task ended: {e}"),
                            })
                        })
                    }
                    .boxed()
                    .shared()
                })
                .clone()
        };
        fut.await.map(|r| (name, r))
    }
}

async fn make<T: Tart>(
    tart: &T,
    name: &VmName,
    source: &str,
    creds: Option<&Credentials>,
) -> Result<GoldenResult, GoldenFailure> {
    let fail = |e: &tart::Error| GoldenFailure {
        kind: e.kind(),
        message: e.to_string(),
    };
    let vms = tart.list().await.map_err(|e| fail(&e))?;
    if vms
        .iter()
        .any(|v| v.source == Source::Local && v.name == name.as_str())
    {
        return Ok(GoldenResult::Hit);
    }
    match tart.clone_vm(source, name, creds).await {
        Ok(()) => {
            info!(golden = %name, %source, "golden base made");
            Ok(GoldenResult::Miss)
        }
        Err(e) => {
            // Whatever the clone left under this name must not serve as a base.
            if let Err(d) = tart.delete(name).await
                && d.kind() != ErrorKind::NotFound
            {
                warn!(golden = %name, error = %d, "could not delete a golden that failed");
            }
            Err(fail(&e))
        }
    }
}

#[cfg(test)]
mod tests;
