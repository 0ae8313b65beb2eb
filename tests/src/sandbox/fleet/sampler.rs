//! What the fleet follows in the background while its image rolls, so that nothing is missed
//! between workload ticks (a tick can take seconds on a loaded machine): every Node Lease
//! change, for the pre-pull tokens ([`super::tokens`]), and the pulls in the shared registry
//! every [`REGISTRY_PERIOD`]. Runs as a task until dropped.

use std::{
    path::PathBuf,
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use kube::{
    Api, Client,
    runtime::{WatchStreamExt, watcher},
};

use super::tokens::{TokenLog, prepull_token};
use crate::fake::bandwidth;

/// How often the registry's pulls are counted.
const REGISTRY_PERIOD: Duration = Duration::from_millis(100);

/// The record both sides of the task keep.
#[derive(Debug, Clone, Default)]
pub(super) struct Record {
    pub(super) tokens: TokenLog,
    /// Most pulls in the registry at once.
    pub(super) peak_pulls: u32,
}

/// The running task.
pub(super) struct Sampler {
    record: Arc<Mutex<Record>>,
    task: tokio::task::JoinHandle<()>,
}

impl Sampler {
    /// Follows the Node Leases and counts the pulls in `registry`.
    pub(super) fn start(admin: &Client, registry: PathBuf) -> Sampler {
        let record: Arc<Mutex<Record>> = Arc::default();
        let api: Api<Lease> = Api::namespaced(admin.clone(), "kube-node-lease");
        let r = record.clone();
        let task = tokio::spawn(async move {
            let mut leases = watcher(api, watcher::Config::default())
                .default_backoff()
                .applied_objects()
                .boxed();
            let mut tick = tokio::time::interval(REGISTRY_PERIOD);
            loop {
                tokio::select! {
                    ev = leases.next() => match ev {
                        Some(Ok(l)) => {
                            if let Some(node) = l.metadata.name.as_deref() {
                                lock(&r).tokens.lease(node, prepull_token(&l));
                            }
                        }
                        Some(Err(_)) => {}
                        None => return,
                    },
                    _ = tick.tick() => {
                        let n = bandwidth::active_pulls(&registry) as u32;
                        let mut rec = lock(&r);
                        rec.peak_pulls = rec.peak_pulls.max(n);
                    }
                }
            }
        });
        Sampler { record, task }
    }

    /// What was seen so far.
    pub(super) fn record(&self) -> Record {
        lock(&self.record).clone()
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn lock(r: &Mutex<Record>) -> std::sync::MutexGuard<'_, Record> {
    r.lock().unwrap_or_else(|p| p.into_inner())
}
