//! The sandbox's own watch on the workload's Pods, for the fleet's latencies: when each Pod was
//! first seen, first seen bound to a Node, first seen `Running`. Both ends of each latency are
//! seen through the same watch, so its own delivery delay cancels out. It also records each
//! Pod's end ([`super::ends`]), for the workload's count. The watch runs as a task until
//! dropped; recording an event is pure.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::{Arc, Mutex},
    time::Instant,
};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::{
    Api, Client,
    runtime::{
        WatchStreamExt,
        watcher::{self, Event},
    },
};

use super::ends::{self, Ends};
use crate::sandbox::{
    guest::{self, GuestDirs},
    workload::PoolState,
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

/// What the watch saw so far.
#[derive(Default)]
struct Record {
    times: Times,
    ends: Ends,
    /// The Pods of a relist under way.
    listed: BTreeSet<String>,
}

impl Record {
    /// Records one watch event; `exit_of` reads a runner's guest exit code by Pod UID.
    fn event(&mut self, ev: &Event<Pod>, exit_of: Option<ends::ExitOf<'_>>) {
        match ev {
            Event::Apply(pod) | Event::InitApply(pod) => {
                if let (Event::InitApply(_), Some(name)) = (ev, &pod.metadata.name) {
                    self.listed.insert(name.clone());
                }
                observe(&mut self.times, pod, Instant::now());
                ends::observe(&mut self.ends, pod, false, exit_of);
            }
            Event::Delete(pod) => ends::observe(&mut self.ends, pod, true, exit_of),
            Event::Init => self.listed.clear(),
            Event::InitDone => ends::relisted(&mut self.ends, &self.listed),
        }
    }
}

/// The watch task; its record is shared. Dropping it ends the watch.
pub struct PodWatch {
    record: Arc<Mutex<Record>>,
    task: tokio::task::JoinHandle<()>,
}

impl PodWatch {
    /// Watches the Pods of `ns` (the watcher relists after an error, with backoff). With
    /// `guest_dirs` (the runners run a job), reads each runner's guest exit code when it first
    /// sees the Pod ended.
    pub fn start(admin: &Client, ns: &str, guest_dirs: Option<GuestDirs>) -> PodWatch {
        let record: Arc<Mutex<Record>> = Arc::default();
        let api: Api<Pod> = Api::namespaced(admin.clone(), ns);
        let shared = record.clone();
        let task = tokio::spawn(async move {
            let exit_of = |uid: &str| guest_dirs.as_ref()?.exit_code(&guest::vm_of(uid));
            let exit_of: Option<ends::ExitOf<'_>> = guest_dirs.is_some().then_some(&exit_of);
            let mut pods = watcher::watcher(api, watcher::Config::default())
                .default_backoff()
                .boxed();
            while let Some(ev) = pods.next().await {
                if let Ok(ev) = ev {
                    let mut r = shared.lock().unwrap_or_else(|p| p.into_inner());
                    r.event(&ev, exit_of);
                }
            }
        });
        PodWatch { record, task }
    }

    /// The Pods' times seen so far.
    pub fn times(&self) -> Times {
        self.lock().times.clone()
    }

    /// Counts the Pods' ends seen so far in `state` ([`ends::count`]).
    pub fn count(&self, state: &mut PoolState) {
        ends::count(state, &self.lock().ends);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Record> {
        self.record.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for PodWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod tests;
