//! Pod-side metrics (prefix `tart_kubelet_`) and the [`tart::Observer`] that counts every tart
//! attempt, retry, kill and error.
//!
//! Label values come only from closed enums (`tart::Op::as_str`, `tart::ErrorKind::as_str`,
//! [`Stage::as_str`], …). The two Pod histograms — provision delay and boot duration — are
//! observed through [`PodOnce`], which guarantees one observation per Pod on the success path:
//! never on a retry or restart, never for an adopted VM.

use std::time::Duration;

use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{counter::Counter, family::Family, gauge::Gauge, histogram::Histogram},
    registry::Registry,
};
use tart::{Attempt, AttemptOutcome, ErrorKind, Observer, Op};

use super::{admission::RejectReason, launcher::LauncherOutcome, termination::TerminationHow};
use crate::lifecycle::probes::{ProbeKind, ProbeResult};
use crate::metrics::{OutcomeLabels, register};

/// Buckets for VM-scale durations: a start that takes hours must not hide in the top bucket.
pub(crate) const VM_BUCKETS: [f64; 15] = [
    0.1, 0.5, 1.0, 2.5, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0, 7200.0, 14400.0,
];

/// Provisioning stage (`stage` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Stage {
    /// Image pull.
    Pull,
    Clone,
    Set,
    /// `tart run` until its start window passed.
    Run,
    /// Waiting for the IP.
    Ip,
}

impl Stage {
    /// Every stage.
    pub(crate) const ALL: [Stage; 5] =
        [Stage::Pull, Stage::Clone, Stage::Set, Stage::Run, Stage::Ip];

    /// Label value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Stage::Pull => "pull",
            Stage::Clone => "clone",
            Stage::Set => "set",
            Stage::Run => "run",
            Stage::Ip => "ip",
        }
    }
}

/// Age buckets of Pods admitted but not yet running.
pub(crate) const AGE_BUCKETS: [&str; 6] = ["lt_1m", "1m_5m", "5m_15m", "15m_1h", "1h_4h", "gt_4h"];

/// The `age` label for a pending Pod of this age.
pub(crate) fn age_bucket(age: Duration) -> &'static str {
    match age.as_secs() {
        0..60 => "lt_1m",
        60..300 => "1m_5m",
        300..900 => "5m_15m",
        900..3600 => "15m_1h",
        3600..14400 => "1h_4h",
        _ => "gt_4h",
    }
}

/// VM states for `tart_kubelet_vms`.
pub(crate) const VM_STATES: [&str; 3] = ["provisioning", "running", "stopping"];

macro_rules! labels {
    ($name:ident { $($field:ident),* }) => {
        #[doc = concat!("Labels of one series (", stringify!($($field),*), ").")]
        #[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
        pub(crate) struct $name {
            $(#[doc = concat!("`", stringify!($field), "` label.")] pub(crate) $field: &'static str,)*
        }
    };
}
labels!(StageLabels { stage });
labels!(CommandLabels { command });
labels!(CommandOutcomeLabels { command, outcome });
labels!(CommandKindLabels { command, kind });
labels!(KindLabels { kind });
labels!(AgeLabels { age });
labels!(StateLabels { state });
labels!(ReasonLabels { reason });
labels!(ProbeLabels { probe, result });
labels!(HowLabels { how });

/// The Pod-side metrics. Clones share the same series.
#[derive(Clone, Debug)]
pub(crate) struct PodMetrics {
    /// `pod_provision_delay_seconds`.
    pub provision_delay: Histogram,
    /// `vm_boot_duration_seconds`.
    pub boot_duration: Histogram,
    /// `pod_agent_overhead_seconds`: the agent's own time per Pod before `tart run`.
    pub agent_overhead: Histogram,
    /// `pod_stage_duration_seconds{stage}`.
    pub stage_duration: Family<StageLabels, Histogram>,
    /// `tart_commands_total{command,outcome}`.
    pub tart_commands: Family<CommandOutcomeLabels, Counter>,
    /// `tart_command_duration_seconds{command,outcome}`.
    pub tart_command_duration: Family<CommandOutcomeLabels, Histogram>,
    /// `tart_retries_total{command}`.
    pub tart_retries: Family<CommandLabels, Counter>,
    /// `tart_kills_total{command}`.
    pub tart_kills: Family<CommandLabels, Counter>,
    /// `tart_errors_total{command,kind}`.
    pub tart_errors: Family<CommandKindLabels, Counter>,
    /// `host_faults_total{kind}`.
    pub host_faults: Family<KindLabels, Counter>,
    /// `pods_pending{age}`.
    pub pods_pending: Family<AgeLabels, Gauge>,
    /// `vms{state}`.
    pub vms: Family<StateLabels, Gauge>,
    /// `reconciles_total{outcome}`.
    pub reconciles: Family<OutcomeLabels, Counter>,
    /// `reconcile_duration_seconds`.
    pub reconcile_duration: Histogram,
    /// `reconcile_errors_total{kind}`.
    pub reconcile_errors: Family<KindLabels, Counter>,
    /// `pod_admission_rejections_total{reason}`.
    pub rejections: Family<ReasonLabels, Counter>,
    /// `pod_starts_total{outcome}`.
    pub pod_starts: Family<OutcomeLabels, Counter>,
    /// `vm_exits_total{reason}`.
    pub vm_exits: Family<ReasonLabels, Counter>,
    /// `guest_config_errors_total{kind}`: a container could not be configured (a missing
    /// Secret, ConfigMap or key, an invalid reference or path, a token refused).
    pub guest_config_errors: Family<KindLabels, Counter>,
    /// `guest_volume_updates_total{outcome}`: refreshes of Secret/ConfigMap/token volumes that
    /// changed files (`updated`) or failed (`error`).
    pub guest_volume_updates: Family<OutcomeLabels, Counter>,
    /// `probe_results_total{probe,result}`: readiness, liveness and startup probe attempts.
    pub probe_results: Family<ProbeLabels, Counter>,
    /// `pod_termination_seconds{how}`: a running Pod's deletion seen to its VM gone.
    pub termination: Family<HowLabels, Histogram>,
    /// kubelet's `prober_probe_total`, served on the kubelet port's `/metrics/probes` only
    /// (not in this registry: its labels name Pods).
    pub prober: crate::kubelet_api::scrape::probes::ProberCounts,
    /// `guest_launchers_total{outcome}`: how each start attempt's wait for a guest launcher
    /// ended ([`LauncherOutcome`]).
    pub guest_launchers: Family<OutcomeLabels, Counter>,
    /// `guest_launcher_wait_seconds{outcome}`: `tart run` to the launcher's first report, by
    /// where the launcher came from (`image`, `delivered`).
    pub guest_launcher_wait: Family<OutcomeLabels, Histogram>,
}

/// `kind` values of `guest_config_errors_total` (`ConfigError::kind`).
pub(crate) const GUEST_CONFIG_ERROR_KINDS: [&str; 8] = [
    "missing_object",
    "missing_key",
    "invalid_reference",
    "nul_in_env",
    "invalid_path",
    "token",
    "io",
    "fetch",
];

/// Buckets for the agent's own overhead: half a millisecond to ten seconds.
const OVERHEAD_BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

fn vm_histogram() -> Histogram {
    Histogram::new(VM_BUCKETS)
}

fn command_histogram() -> Histogram {
    Histogram::new([
        0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0, 14400.0,
    ])
}

impl PodMetrics {
    /// Create the metrics and register them under `tart_kubelet_`.
    pub(crate) fn register(registry: &mut Registry) -> Self {
        let m = Self {
            provision_delay: vm_histogram(),
            agent_overhead: Histogram::new(OVERHEAD_BUCKETS),
            boot_duration: vm_histogram(),
            stage_duration: Family::new_with_constructor(vm_histogram),
            tart_commands: Family::default(),
            tart_command_duration: Family::new_with_constructor(command_histogram),
            tart_retries: Family::default(),
            tart_kills: Family::default(),
            tart_errors: Family::default(),
            host_faults: Family::default(),
            pods_pending: Family::default(),
            vms: Family::default(),
            reconciles: Family::default(),
            reconcile_duration: Histogram::new([
                0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0,
            ]),
            reconcile_errors: Family::default(),
            rejections: Family::default(),
            pod_starts: Family::default(),
            vm_exits: Family::default(),
            guest_config_errors: Family::default(),
            guest_volume_updates: Family::default(),
            probe_results: Family::default(),
            termination: Family::new_with_constructor(vm_histogram),
            prober: Default::default(),
            guest_launchers: Family::default(),
            guest_launcher_wait: Family::new_with_constructor(command_histogram),
        };
        let r = registry.sub_registry_with_prefix("tart_kubelet");
        register!(r;
            "pod_provision_delay_seconds", "Pod creation to just before tart run, once per Pod on success" => m.provision_delay;
            "pod_agent_overhead_seconds", "Agent time per Pod from first seeing it bound to just before tart run, excluding tart operations, VM-slot waits and backoff; once per Pod on a clean first start" => m.agent_overhead;
            "vm_boot_duration_seconds", "tart run to the first guest IP, once per Pod on success" => m.boot_duration;
            "pod_stage_duration_seconds", "Duration of one provisioning stage attempt" => m.stage_duration;
            "tart_commands", "tart attempts by command and outcome" => m.tart_commands;
            "tart_command_duration_seconds", "Wall time of one tart attempt" => m.tart_command_duration;
            "tart_retries", "tart attempts that were retried" => m.tart_retries;
            "tart_kills", "tart processes killed (deadline or stall)" => m.tart_kills;
            "tart_errors", "failed tart attempts by error kind" => m.tart_errors;
            "host_faults", "host faults met while starting VMs" => m.host_faults;
            "pods_pending", "Pods admitted but not yet running, by age" => m.pods_pending;
            "vms", "VMs by state" => m.vms;
            "reconciles", "Pod reconciles by outcome" => m.reconciles;
            "reconcile_duration_seconds", "Duration of one Pod reconcile" => m.reconcile_duration;
            "reconcile_errors", "Pod reconcile errors by kind" => m.reconcile_errors;
            "pod_admission_rejections", "Pods rejected at admission, by reason" => m.rejections;
            "pod_starts", "VM starts by outcome" => m.pod_starts;
            "vm_exits", "VM exits by reason" => m.vm_exits;
            "guest_config_errors", "Containers that could not be configured, by error kind" => m.guest_config_errors;
            "guest_volume_updates", "Secret, ConfigMap and token volume refreshes that changed files or failed" => m.guest_volume_updates;
            "probe_results", "Probe attempts by probe (startup, readiness, liveness) and result (success, failure, error)" => m.probe_results;
            "pod_termination_seconds", "A running Pod's deletion seen to its VM gone, by how it ended (idle, waited, grace_expired)" => m.termination;
            "guest_launchers", "Start attempts' waits for a guest launcher, by outcome (image, delivered, missing, failed)" => m.guest_launchers;
            "guest_launcher_wait_seconds", "tart run to the guest launcher's first report, by where the launcher came from (image, delivered)" => m.guest_launcher_wait;
        );
        m.precreate();
        m
    }

    /// Every closed label set exists from the first scrape.
    fn precreate(&self) {
        for s in Stage::ALL {
            let _ = self
                .stage_duration
                .get_or_create(&StageLabels { stage: s.as_str() });
        }
        for op in Op::ALL {
            let command = op.as_str();
            let _ = self.tart_retries.get_or_create(&CommandLabels { command });
            let _ = self.tart_kills.get_or_create(&CommandLabels { command });
            for outcome in ["ok", "error", "timeout", "stalled"] {
                let _ = self
                    .tart_commands
                    .get_or_create(&CommandOutcomeLabels { command, outcome });
            }
        }
        for k in ErrorKind::ALL.into_iter().filter(|k| k.is_host_fault()) {
            let _ = self
                .host_faults
                .get_or_create(&KindLabels { kind: k.as_str() });
        }
        for age in AGE_BUCKETS {
            let _ = self.pods_pending.get_or_create(&AgeLabels { age });
        }
        for state in VM_STATES {
            let _ = self.vms.get_or_create(&StateLabels { state });
        }
        for outcome in ["ok", "error"] {
            let _ = self.reconciles.get_or_create(&OutcomeLabels { outcome });
            let _ = self.pod_starts.get_or_create(&OutcomeLabels { outcome });
        }
        for r in RejectReason::ALL {
            let _ = self
                .rejections
                .get_or_create(&ReasonLabels { reason: r.as_str() });
        }
        for kind in GUEST_CONFIG_ERROR_KINDS {
            let _ = self.guest_config_errors.get_or_create(&KindLabels { kind });
        }
        for outcome in ["updated", "error"] {
            let _ = self
                .guest_volume_updates
                .get_or_create(&OutcomeLabels { outcome });
        }
        for probe in ProbeKind::ALL {
            for result in ProbeResult::ALL {
                let _ = self.probe_results.get_or_create(&ProbeLabels {
                    probe: probe.as_str(),
                    result: result.as_str(),
                });
            }
        }
        for how in TerminationHow::ALL {
            let _ = self
                .termination
                .get_or_create(&HowLabels { how: how.as_str() });
        }
        for o in LauncherOutcome::ALL {
            let outcome = o.as_str();
            let _ = self
                .guest_launchers
                .get_or_create(&OutcomeLabels { outcome });
            if matches!(o, LauncherOutcome::Image | LauncherOutcome::Delivered) {
                let _ = self
                    .guest_launcher_wait
                    .get_or_create(&OutcomeLabels { outcome });
            }
        }
        for reason in ["completed", "failed", "signaled", "unknown"] {
            let _ = self.vm_exits.get_or_create(&ReasonLabels { reason });
        }
    }

    /// One stage attempt took `d`.
    pub(crate) fn stage(&self, stage: Stage, d: Duration) {
        self.stage_duration
            .get_or_create(&StageLabels {
                stage: stage.as_str(),
            })
            .observe(d.as_secs_f64());
    }

    /// A host fault of `kind` was met.
    pub(crate) fn host_fault(&self, kind: ErrorKind) {
        if kind.is_host_fault() {
            self.host_faults
                .get_or_create(&KindLabels {
                    kind: kind.as_str(),
                })
                .inc();
        }
    }

    /// Replace the pending-age and VM-state gauges with a fresh count.
    pub(crate) fn set_population(&self, pending_ages: &[Duration], vms: [i64; 3]) {
        for age in AGE_BUCKETS {
            let n = pending_ages
                .iter()
                .filter(|a| age_bucket(**a) == age)
                .count();
            self.pods_pending
                .get_or_create(&AgeLabels { age })
                .set(i64::try_from(n).unwrap_or(i64::MAX));
        }
        for (state, n) in VM_STATES.into_iter().zip(vms) {
            self.vms.get_or_create(&StateLabels { state }).set(n);
        }
    }
}

/// The `outcome` label of one tart attempt.
pub(crate) fn attempt_outcome(o: AttemptOutcome) -> &'static str {
    match o {
        AttemptOutcome::Ok => "ok",
        AttemptOutcome::Error(ErrorKind::Timeout) => "timeout",
        AttemptOutcome::Error(ErrorKind::Stalled) => "stalled",
        AttemptOutcome::Error(_) => "error",
    }
}

impl Observer for PodMetrics {
    fn attempt(&self, a: &Attempt) {
        let command = a.op.as_str();
        let outcome = attempt_outcome(a.outcome);
        let l = CommandOutcomeLabels { command, outcome };
        self.tart_commands.get_or_create(&l).inc();
        self.tart_command_duration
            .get_or_create(&l)
            .observe(a.elapsed.as_secs_f64());
        if a.will_retry {
            self.tart_retries
                .get_or_create(&CommandLabels { command })
                .inc();
        }
        if a.killed {
            self.tart_kills
                .get_or_create(&CommandLabels { command })
                .inc();
        }
        if let AttemptOutcome::Error(kind) = a.outcome {
            self.tart_errors
                .get_or_create(&CommandKindLabels {
                    command,
                    kind: kind.as_str(),
                })
                .inc();
        }
    }
}

/// Guards the two once-per-Pod histograms. One per Pod worker.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct PodOnce {
    provision_done: bool,
    boot_done: bool,
}

impl PodOnce {
    /// For a VM found running after an agent restart: it never counts.
    pub(crate) fn adopted() -> Self {
        Self {
            provision_done: true,
            boot_done: true,
        }
    }

    /// Just before `tart run`: observe the provision delay if this is the Pod's first start.
    /// Returns whether it was observed.
    pub(crate) fn provision(&mut self, m: &PodMetrics, since_creation: Duration) -> bool {
        if std::mem::replace(&mut self.provision_done, true) {
            return false;
        }
        m.provision_delay.observe(since_creation.as_secs_f64());
        true
    }

    /// First IP: observe the boot duration if this is the Pod's first boot. Never before the
    /// provision delay was observed by this process (an adopted or restarted VM).
    pub(crate) fn boot(&mut self, m: &PodMetrics, since_run: Duration) -> bool {
        if !self.provision_done || std::mem::replace(&mut self.boot_done, true) {
            return false;
        }
        m.boot_duration.observe(since_run.as_secs_f64());
        true
    }

    /// The VM's run ended. If it ended before its first IP, the Pod's one boot was not a
    /// success and a later restart's boot is a retry: neither is observed.
    pub(crate) fn run_ended(&mut self) {
        if self.provision_done {
            self.boot_done = true;
        }
    }
}

#[cfg(test)]
mod tests;
