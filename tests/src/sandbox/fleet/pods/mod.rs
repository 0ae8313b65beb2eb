//! The sandbox's own watch on the workload's Pods, for the fleet's latencies: when each Pod was
//! first seen, first seen bound to a Node, first seen `Running`. Both ends of each latency are
//! seen through the same watch, so its own delivery delay cancels out. The watch runs as a task
//! until dropped; recording an event is pure.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
    time::Instant,
};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::{
    Api, Client,
    runtime::{WatchStreamExt, watcher},
};

/// When one Pod was seen at each step.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PodTimes {
    pub created: Option<Instant>,
    pub bound: Option<Instant>,
    pub running: Option<Instant>,
}

/// Every Pod's times, by name.
pub type Times = BTreeMap<String, PodTimes>;

/// Records what `pod` shows at `now` (only first sightings count).
pub fn observe(times: &mut Times, pod: &Pod, now: Instant) {
    let Some(name) = pod.metadata.name.clone() else {
        return;
    };
    let t = times.entry(name).or_default();
    t.created.get_or_insert(now);
    if pod.spec.as_ref().is_some_and(|s| s.node_name.is_some()) {
        t.bound.get_or_insert(now);
    }
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    if phase == Some("Running") {
        t.running.get_or_insert(now);
    }
}

/// Seconds from `from` to `to` of every Pod that has both.
pub fn between(
    times: &Times,
    from: impl Fn(&PodTimes) -> Option<Instant>,
    to: impl Fn(&PodTimes) -> Option<Instant>,
) -> Vec<f64> {
    times
        .values()
        .filter_map(|t| Some(to(t)?.checked_duration_since(from(t)?)?.as_secs_f64()))
        .collect()
}

/// The watch task; its record is shared. Dropping it ends the watch.
pub struct PodWatch {
    times: Arc<Mutex<Times>>,
    task: tokio::task::JoinHandle<()>,
}

impl PodWatch {
    /// Watches the Pods of `ns` (the watcher relists after an error, with backoff).
    pub fn start(admin: &Client, ns: &str) -> PodWatch {
        let times: Arc<Mutex<Times>> = Arc::default();
        let api: Api<Pod> = Api::namespaced(admin.clone(), ns);
        let record = times.clone();
        let task = tokio::spawn(async move {
            let mut pods = watcher(api, watcher::Config::default())
                .default_backoff()
                .applied_objects()
                .boxed();
            while let Some(ev) = pods.next().await {
                if let Ok(pod) = ev {
                    let mut t = record.lock().unwrap_or_else(|p| p.into_inner());
                    observe(&mut t, &pod, Instant::now());
                }
            }
        });
        PodWatch { times, task }
    }

    /// What was seen so far.
    pub fn times(&self) -> Times {
        self.times.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl Drop for PodWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod tests;
