//! An in-memory [`LogSource`] for tests: fixed lines per container; honours `tailLines` and
//! `limitBytes` (the parts of the query the HTTP tests check), never follows.

use std::collections::HashMap;

use bytes::Bytes;
use futures::{FutureExt, future::BoxFuture, stream};

use super::{LogError, LogQuery, LogSource, LogStream, LogTarget};

/// Lines per container, keyed by namespace and Pod.
#[derive(Debug, Default, Clone)]
pub(crate) struct MemoryLogs {
    pods: HashMap<(String, String), HashMap<String, Vec<String>>>,
}

impl MemoryLogs {
    /// Adds a container with these lines (each sent with a trailing newline).
    pub(crate) fn with(
        mut self,
        namespace: &str,
        pod: &str,
        container: &str,
        lines: &[&str],
    ) -> Self {
        self.pods
            .entry((namespace.into(), pod.into()))
            .or_default()
            .insert(
                container.into(),
                lines.iter().map(|l| format!("{l}\n")).collect(),
            );
        self
    }
}

impl LogSource for MemoryLogs {
    fn open(
        &self,
        target: &LogTarget,
        query: &LogQuery,
    ) -> BoxFuture<'static, Result<LogStream, LogError>> {
        let result = (|| {
            let containers = self
                .pods
                .get(&(target.namespace.clone(), target.pod.clone()))
                .ok_or_else(|| LogError::PodNotFound {
                    pod: target.pod.clone(),
                })?;
            let lines =
                containers
                    .get(&target.container)
                    .ok_or_else(|| LogError::ContainerNotFound {
                        container: target.container.clone(),
                        pod: target.pod.clone(),
                    })?;
            let skip = query
                .tail_lines
                .map_or(0, |n| lines.len().saturating_sub(n as usize));
            let mut text: Vec<u8> = lines[skip..].concat().into_bytes();
            if let Some(limit) = query.limit_bytes {
                text.truncate(limit as usize);
            }
            let chunks: Vec<std::io::Result<Bytes>> = text
                .split_inclusive(|b| *b == b'\n')
                .map(|l| Ok(Bytes::copy_from_slice(l)))
                .collect();
            Ok(Box::pin(stream::iter(chunks)) as LogStream)
        })();
        async move { result }.boxed()
    }
}
