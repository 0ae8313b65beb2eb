//! Per-VM vitals: the host's memory pressure, swap and free disk, each VM's CPU and resident
//! memory seen from the host, and the guest's own memory figures (docs/guest.md, "Vitals").
//!
//! One [`sampler`] task owns the state and publishes a [`model::Snapshot`] through a `watch`
//! channel; the Pod side reads it through a cheap [`Vitals`] handle to explain a VM's death
//! ([`death`]), and the kubelet API serves it as `/stats/summary` and `/metrics/resource`.
//! The macOS texts are parsed in `crate::macos::parse::vitals`; [`procs`] finds each VM's
//! processes, [`host_source`] the host's figures.

pub(crate) mod death;
pub(crate) mod guest;
pub(crate) mod host_source;
pub(crate) mod metrics;
pub(crate) mod model;
pub(crate) mod procs;
pub(crate) mod sampler;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use tokio::sync::watch;
use tracing::{Instrument, info_span, warn};

use death::{Ending, Verdict};
use metrics::VitalsMetrics;
use model::{GuestSample, HostSample, Snapshot};

/// How many samples a death's log line and summary draw on.
pub(crate) const DEATH_SAMPLES: usize = 5;

/// A cheap handle on the sampler's latest snapshot.
#[derive(Clone, Debug)]
pub(crate) struct Vitals {
    rx: watch::Receiver<Arc<Snapshot>>,
    /// The sampling interval; zero when sampling is off.
    pub interval: Duration,
    pub metrics: VitalsMetrics,
}

impl Vitals {
    /// A handle on `rx`.
    pub(crate) fn new(
        rx: watch::Receiver<Arc<Snapshot>>,
        interval: Duration,
        metrics: VitalsMetrics,
    ) -> Self {
        Self {
            rx,
            interval,
            metrics,
        }
    }

    /// A handle that never sees a sample.
    #[cfg(test)]
    pub(crate) fn off(metrics: VitalsMetrics) -> Self {
        let (_tx, rx) = watch::channel(Arc::new(Snapshot::default()));
        Self::new(rx, Duration::ZERO, metrics)
    }

    /// The latest snapshot.
    pub(crate) fn snapshot(&self) -> Arc<Snapshot> {
        self.rx.borrow().clone()
    }

    /// Explains the end of `vm`'s run: reads its guest's newest samples from `status_dir`
    /// (fresher than the last tick), classifies, counts the death and logs the last samples.
    /// `None` for a clean end.
    pub(crate) fn explain(
        &self,
        vm: &str,
        status_dir: Option<&Path>,
        mut end: Ending,
    ) -> Option<Verdict> {
        let snap = self.snapshot();
        let known = snap.vms.get(vm).cloned().unwrap_or_default();
        let fresh = status_dir
            .and_then(|d| guest::read_tail(d, guest::TAIL_BYTES).ok())
            .unwrap_or_default();
        let guest: Vec<GuestSample> = if fresh.is_empty() {
            known.guest.tail(model::HISTORY)
        } else {
            fresh
        };
        let mut with_guest = known.clone();
        with_guest.guest = guest.iter().copied().collect();
        if !self.interval.is_zero() {
            end.guest_silent |=
                sampler::guest_silent(&with_guest, Timestamp::now().as_second(), self.interval);
        }
        let host: Vec<HostSample> = snap.host.tail(DEATH_SAMPLES);
        let verdict = death::classify(&end, &guest, &host)?;
        self.metrics.death(verdict.cause);
        let last_guest = guest
            .iter()
            .rev()
            .take(DEATH_SAMPLES)
            .rev()
            .collect::<Vec<_>>();
        let last_vm = known.host.tail(DEATH_SAMPLES);
        warn!(
            %vm,
            cause = verdict.cause.as_str(),
            disruption = verdict.disruption.unwrap_or(""),
            summary = %verdict.summary,
            guest_samples = ?last_guest,
            vm_samples = ?last_vm,
            host_samples = ?host,
            "vm died"
        );
        Some(verdict)
    }
}

/// What starting the sampler needs.
pub(crate) struct Start {
    /// Zero: no sampling (the handle stays empty).
    pub interval: Duration,
    /// `--vitals-host-file`.
    pub host_overrides: Option<PathBuf>,
    pub tart_home: PathBuf,
    pub wanted: sampler::WantedVms,
    pub status_dir: sampler::StatusDir,
    pub metrics: VitalsMetrics,
}

/// Starts the sampler (unless the interval is zero) and returns its handle and task.
pub(crate) fn start(
    s: Start,
    shutdown: watch::Receiver<bool>,
) -> (Vitals, Option<tokio::task::JoinHandle<()>>) {
    let (tx, rx) = watch::channel(Arc::new(Snapshot::default()));
    let handle = Vitals::new(rx, s.interval, s.metrics.clone());
    if s.interval.is_zero() {
        return (handle, None);
    }
    let sampler = sampler::Sampler {
        interval: s.interval,
        host: host_source::HostSource::for_platform(s.host_overrides),
        tart_home: s.tart_home,
        wanted: s.wanted,
        status_dir: s.status_dir,
        metrics: s.metrics,
        tx,
    };
    let task = tokio::spawn(sampler.run(shutdown).instrument(info_span!("vitals")));
    (handle, Some(task))
}
