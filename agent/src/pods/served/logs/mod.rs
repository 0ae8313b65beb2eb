//! The log store behind the kubelet API's `/containerLogs`: finds the Pod among those this
//! agent runs (for its UID, which names its log directory), checks the container, and streams
//! its log with [`read`]. Errors keep kubelet's words.

use std::{path::PathBuf, sync::Arc};

use futures::{FutureExt, future::BoxFuture};
use kube::ResourceExt;

use crate::container_logs::{LogError as StoreError, LogWatch, PodLogId, read};
use crate::kubelet_api::{
    PodSource,
    logs::{LogError, LogQuery, LogSource, LogStream, LogTarget},
};

/// Container logs under the Pod log root, for the Pods `pods` lists.
pub(crate) struct PodLogStore {
    root: PathBuf,
    pods: Arc<dyn PodSource>,
    /// Wakes followed logs.
    watch: LogWatch,
}

impl PodLogStore {
    /// The store under `root`; followed logs wake through `watch`.
    pub(crate) fn new(root: PathBuf, pods: Arc<dyn PodSource>, watch: LogWatch) -> Self {
        Self { root, pods, watch }
    }
}

impl LogSource for PodLogStore {
    fn open(
        &self,
        target: &LogTarget,
        query: &LogQuery,
    ) -> BoxFuture<'static, Result<LogStream, LogError>> {
        let found = self.pods.pod(&target.namespace, &target.pod);
        let Some(pod) = found else {
            let e = LogError::PodNotFound {
                pod: target.pod.clone(),
            };
            return futures::future::ready(Err(e)).boxed();
        };
        let has_container = pod
            .spec
            .as_ref()
            .is_some_and(|s| s.containers.iter().any(|c| c.name == target.container));
        if !has_container {
            let e = LogError::ContainerNotFound {
                container: target.container.clone(),
                pod: target.pod.clone(),
            };
            return futures::future::ready(Err(e)).boxed();
        }
        let id = PodLogId {
            namespace: target.namespace.clone(),
            name: target.pod.clone(),
            uid: pod.uid().unwrap_or_default(),
        };
        let (root, container, query) = (self.root.clone(), target.container.clone(), query.clone());
        let watch = self.watch.clone();
        async move {
            let stream = read(&root, &id, &container, &query, &watch)
                .await
                .map_err(convert)?;
            Ok(Box::pin(stream) as LogStream)
        }
        .boxed()
    }
}

/// The store's error as the HTTP side answers it: a state that has no log is a 400 with
/// kubelet's text, a failed read a 500.
fn convert(e: StoreError) -> LogError {
    tracing::debug!(kind = e.kind().as_str(), error = %e, "container log not served");
    match e {
        StoreError::PreviousNotFound { .. }
        | StoreError::NotStarted { .. }
        | StoreError::InvalidName(_) => LogError::Unavailable(e.to_string()),
        StoreError::Io { source, .. } => LogError::Read(source),
    }
}

#[cfg(test)]
mod tests;
