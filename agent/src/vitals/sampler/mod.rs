//! The one sampler task: every interval it takes a host sample, sums each wanted VM's
//! processes and reads each VM's guest vitals, then publishes a new [`Snapshot`] through a
//! `watch` channel and updates the gauges. It owns the state; readers hold a `Vitals` handle.
//! A tick that overruns its deadline is dropped (its blocking work finishes on its own).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use tokio::sync::watch;
use tracing::{debug, warn};

use super::{
    guest,
    host_source::HostSource,
    metrics::{Source, VitalsMetrics},
    model::{HostSample, Snapshot, VmSample, VmVitals},
    procs::{self, VmUsage},
};

/// The VMs of the Pods bound here.
pub(crate) type WantedVms = Arc<dyn Fn() -> BTreeSet<String> + Send + Sync>;
/// A VM's status share on the host.
pub(crate) type StatusDir = Arc<dyn Fn(&str) -> Option<PathBuf> + Send + Sync>;

/// What one tick read, before it is folded into the snapshot.
#[derive(Debug, Clone, Default)]
pub(crate) struct Reading {
    pub host: HostSample,
    pub vms: BTreeMap<String, VmUsage>,
    /// Each wanted VM's guest samples; `None` when its file could not be read.
    pub guest: BTreeMap<String, Option<Vec<crate::vitals::model::GuestSample>>>,
}

/// The sampler's inputs.
pub(crate) struct Sampler {
    pub interval: Duration,
    pub host: HostSource,
    pub tart_home: PathBuf,
    pub wanted: WantedVms,
    pub status_dir: StatusDir,
    pub metrics: VitalsMetrics,
    pub tx: watch::Sender<Arc<Snapshot>>,
}

impl Sampler {
    /// Samples until `shutdown` turns true.
    pub(crate) async fn run(self, mut shutdown: watch::Receiver<bool>) {
        let mut tick = tokio::time::interval(self.interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let owners = Arc::new(std::sync::Mutex::new(HashMap::new()));
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = shutdown.wait_for(|s| *s) => return,
            }
            let wanted = (self.wanted)();
            let dirs: Vec<(String, Option<PathBuf>)> = wanted
                .iter()
                .map(|vm| (vm.clone(), (self.status_dir)(vm)))
                .collect();
            let host = self.host.clone();
            let home = self.tart_home.clone();
            let owners = owners.clone();
            let work =
                tokio::task::spawn_blocking(move || read(&host, &home, &wanted, &dirs, &owners));
            let reading =
                match tokio::time::timeout(self.interval.max(Duration::from_secs(5)), work).await {
                    Ok(Ok(r)) => r,
                    Ok(Err(error)) => {
                        warn!(%error, "vitals sample failed");
                        self.metrics.sample(Source::Host, false);
                        continue;
                    }
                    Err(_) => {
                        warn!("vitals sample passed its deadline");
                        self.metrics.sample(Source::Host, false);
                        continue;
                    }
                };
            let now = Timestamp::now();
            let prev = self.tx.borrow().clone();
            let (next, counts) = fold(&prev, reading, now);
            self.publish(&next, counts);
            self.tx.send_replace(Arc::new(next));
        }
    }

    fn publish(&self, s: &Snapshot, counts: Counts) {
        let m = &self.metrics;
        m.sample(Source::Host, counts.host_ok);
        for _ in 0..counts.guest_ok {
            m.sample(Source::Guest, true);
        }
        for _ in 0..counts.guest_err {
            m.sample(Source::Guest, false);
        }
        if let Some(h) = s.host.last() {
            if let Some(p) = h.pressure {
                m.pressure_level.set(i64::from(p.level()));
            }
            if let Some(f) = h.free_percent {
                m.free_percent.set(i64::from(f));
            }
            if let Some(b) = h.swap_used_bytes {
                m.swap_used_bytes.set(i64::try_from(b).unwrap_or(i64::MAX));
            }
        }
        let (cores, rss) = running_totals(s);
        m.vms_cpu_cores.set(cores);
        m.vms_rss_bytes.set(i64::try_from(rss).unwrap_or(i64::MAX));
        debug!(vms = s.vms.len(), cores, rss, "vitals sampled");
    }
}

fn read(
    host: &HostSource,
    home: &std::path::Path,
    wanted: &BTreeSet<String>,
    dirs: &[(String, Option<PathBuf>)],
    owners: &std::sync::Mutex<procs::Roots>,
) -> Reading {
    let host_sample = host.sample(home);
    let mut o = owners
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let vms = match host {
        HostSource::Mac => {
            procs::mac_usage(wanted, &mut o, Duration::from_secs(5)).unwrap_or_default()
        }
        HostSource::Linux { .. } => procs::linux_usage(wanted, &mut o),
    };
    drop(o);
    let guest = dirs
        .iter()
        .map(|(vm, dir)| {
            let samples = dir
                .as_deref()
                .and_then(|d| guest::read_tail(d, guest::TICK_BYTES).ok());
            (vm.clone(), samples)
        })
        .collect();
    Reading {
        host: host_sample,
        vms,
        guest,
    }
}

/// Samples counted by one tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Counts {
    pub host_ok: bool,
    pub guest_ok: u32,
    pub guest_err: u32,
}

/// PURE: the next snapshot from the previous one and a tick's reading. A VM stays while it is
/// wanted (its history is what explains its death); one no longer wanted is dropped.
pub(crate) fn fold(prev: &Snapshot, r: Reading, now: Timestamp) -> (Snapshot, Counts) {
    let mut next = Snapshot {
        host: prev.host.clone(),
        vms: BTreeMap::new(),
    };
    let host_ok = r.host.pressure.is_some() || r.host.free_percent.is_some();
    next.host.push(HostSample {
        at: Some(now),
        ..r.host
    });
    let mut counts = Counts {
        host_ok,
        ..Counts::default()
    };
    for (vm, guest) in r.guest {
        let mut v = prev.vms.get(&vm).cloned().unwrap_or_default();
        if let Some(u) = r.vms.get(&vm) {
            let cpu_cores = v.host.last().and_then(|p| {
                let dt = (now.as_millisecond() - p.at.as_millisecond()) as f64 / 1000.0;
                (dt > 0.0).then(|| ((u.cpu_seconds_total - p.cpu_seconds_total) / dt).max(0.0))
            });
            v.first_seen.get_or_insert(now);
            v.host.push(VmSample {
                at: now,
                cpu_seconds_total: u.cpu_seconds_total,
                cpu_cores,
                rss_bytes: u.rss_bytes,
            });
        }
        if let Some(samples) = guest {
            // Only lines newer than the last one kept are added: the series outlives the
            // few lines one tick reads.
            let last_ts = v.guest.last().and_then(|s| s.ts);
            for s in samples
                .into_iter()
                .filter(|s| s.ts > last_ts || last_ts.is_none())
            {
                if s.is_empty() {
                    counts.guest_err += 1;
                } else {
                    counts.guest_ok += 1;
                }
                v.guest.push(s);
            }
        }
        next.vms.insert(vm, v);
    }
    (next, counts)
}

/// PURE: summed CPU cores and resident bytes of the VMs sampled at the newest tick.
pub(crate) fn running_totals(s: &Snapshot) -> (f64, u64) {
    let Some(now) = s.host.last().and_then(|h| h.at) else {
        return (0.0, 0);
    };
    s.vms
        .values()
        .filter_map(|v| v.host.last().filter(|h| h.at == now))
        .fold((0.0, 0), |(c, r), h| {
            (c + h.cpu_cores.unwrap_or(0.0), r + h.rss_bytes)
        })
}

/// Whether a VM's guest has gone quiet: it reported before, and its last sample is older than
/// three intervals.
pub(crate) fn guest_silent(v: &VmVitals, now_unix: i64, interval: Duration) -> bool {
    let limit = 3 * i64::try_from(interval.as_secs().max(1)).unwrap_or(i64::MAX / 4);
    v.guest
        .last()
        .and_then(|s| s.ts)
        .is_some_and(|ts| now_unix - ts > limit)
}

#[cfg(test)]
mod tests;
