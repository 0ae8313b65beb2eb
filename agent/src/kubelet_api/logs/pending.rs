//! The [`LogSource`] the agent serves until the log store is wired in: it answers kubelet's 404
//! for an unknown Pod or container (from the Pods this agent runs) and a 400 saying the log is
//! not collected for any container that exists.

use std::sync::Arc;

use futures::{FutureExt, future::BoxFuture};

use super::{LogError, LogQuery, LogSource, LogStream, LogTarget};
use crate::kubelet_api::pods::PodSource;

/// Knows the Pods, keeps no logs.
pub(crate) struct NotCollected {
    pods: Arc<dyn PodSource>,
}

impl NotCollected {
    /// Looks Pods up in `pods`.
    pub(crate) fn new(pods: Arc<dyn PodSource>) -> Self {
        Self { pods }
    }
}

impl LogSource for NotCollected {
    fn open(
        &self,
        target: &LogTarget,
        _query: &LogQuery,
    ) -> BoxFuture<'static, Result<LogStream, LogError>> {
        let pod = self.pods.pod(&target.namespace, &target.pod);
        let has_container = pod.as_ref().is_some_and(|p| {
            p.spec
                .iter()
                .flat_map(|s| &s.containers)
                .any(|c| c.name == target.container)
        });
        let err = match (pod, has_container) {
            (None, _) => LogError::PodNotFound {
                pod: target.pod.clone(),
            },
            (Some(_), false) => LogError::ContainerNotFound {
                container: target.container.clone(),
                pod: target.pod.clone(),
            },
            (Some(_), true) => LogError::Unavailable(format!(
                "logs of container {:?} in pod {:?} are not collected by this node yet",
                target.container, target.pod
            )),
        };
        async move { Err(err) }.boxed()
    }
}
