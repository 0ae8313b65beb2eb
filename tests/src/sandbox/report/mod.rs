//! The sandbox report: what a run measured, printed as a table and written as JSON with the
//! stable keys documented in docs/sandbox.md. Building it from scrapes is pure.

pub mod fleet;
pub mod requests;

use serde::Serialize;

use super::{
    chaos::ChaosReport,
    guest::CheckCounts,
    metrics::{Histogram, Sample, sum},
    roll::ImageRollReport,
};

/// Percentiles of one latency, in seconds, estimated from the agents' histograms.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Percentiles {
    /// Observations.
    pub count: u64,
    /// Median.
    pub p50: Option<f64>,
    /// 90th percentile.
    pub p90: Option<f64>,
    /// 99th percentile.
    pub p99: Option<f64>,
    /// Mean (exact: `_sum / _count`).
    pub mean: Option<f64>,
}

impl Percentiles {
    /// From a (summed) histogram.
    pub fn of(h: &Histogram) -> Self {
        Self {
            count: h.count as u64,
            p50: h.quantile(0.5),
            p90: h.quantile(0.9),
            p99: h.quantile(0.99),
            mean: h.mean(),
        }
    }
}

/// Per-stage latencies.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Stages {
    /// `tart pull`.
    pub pull: Percentiles,
    /// `tart clone`.
    pub clone: Percentiles,
    /// `tart run` -> first IP (`tart_kubelet_vm_boot_duration_seconds`).
    pub boot: Percentiles,
    /// Pod creation -> just before `tart run` (`tart_kubelet_pod_provision_delay_seconds`).
    pub provision_delay: Percentiles,
}

/// One agent's resource use.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct AgentUsage {
    pub node: String,
    /// Resident set size at the end of the run, bytes.
    pub rss_bytes: u64,
    /// Peak RSS (VmHWM), bytes.
    pub peak_rss_bytes: u64,
    /// CPU time over wall time of the run, percent of one core.
    pub cpu_percent: f64,
    /// Agent restarts done by the scenario (chaos).
    pub restarts: u32,
}

/// Counts of Pods by how they ended.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct PodCounts {
    /// Pods created by the workload.
    pub created: u64,
    /// Ended `Succeeded`.
    pub succeeded: u64,
    /// Ended `Failed` (expected for injected crashes).
    pub failed: u64,
    /// Deleted by the workload once they had ended (every ended Pod is deleted, as a CI
    /// system deletes a finished runner).
    pub deleted: u64,
}

/// One invariant checked at the end of a scenario.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Invariant {
    /// Stable name, e.g. `no_orphan_vm`.
    pub name: String,
    /// Whether it held.
    pub ok: bool,
    /// What was found, when it did not hold.
    pub detail: String,
}

/// The whole report (`--report PATH` writes it as JSON).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Report {
    /// Bumped when a key changes meaning.
    pub schema: u32,
    /// `steady`, `image-roll`, `chaos` or `idle`.
    pub scenario: String,
    /// Simulated Mac minis.
    pub nodes: u32,
    /// fake-tart latency scale.
    pub latency_scale: f64,
    /// What the agents shared this machine with, as measured at start-up.
    pub host: Host,
    /// Wall time of the workload, seconds.
    pub duration_seconds: f64,
    /// Pod outcomes.
    pub pods: PodCounts,
    /// Stage latencies.
    pub stages_seconds: Stages,
    /// Agent overhead per Pod (bound -> `tart run` spawned, minus time inside tart).
    pub agent_overhead_seconds: Percentiles,
    /// Tart command attempts that timed out or stalled and were killed.
    pub tart_kills: u64,
    /// Tart command retries.
    pub tart_retries: u64,
    /// Requests to the API server per node per minute, from the audit log.
    pub api_requests_per_node_per_minute: f64,
    /// Per-agent resource use.
    pub agents: Vec<AgentUsage>,
    /// Finished runners by their guest's secret check (`null` with `--no-guest` or `idle`).
    pub guest_checks: Option<CheckCounts>,
    /// Faults and their outcomes (`chaos` only; `null` otherwise).
    pub chaos: Option<ChaosReport>,
    /// Both strategies' figures (`image-roll` only; `null` otherwise).
    pub image_roll: Option<ImageRollReport>,
    /// Every request by verb and resource, idle and per Pod lifecycle (`api` only; `null`
    /// otherwise).
    pub api_accounting: Option<requests::ApiAccounting>,
    /// The fleet's figures (`fleet` only; `null` otherwise).
    pub fleet: Option<fleet::FleetReport>,
    /// End-of-run invariants.
    pub invariants: Vec<Invariant>,
    /// All invariants held.
    pub ok: bool,
}

/// How the sandbox shared this machine with the agents (docs/sandbox.md, "What the agents
/// share the machine with").
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Host {
    /// The API server's niceness, read from `/proc` (`null` if it could not be read).
    pub control_plane_nice: Option<i32>,
    /// The file system of the agents' guest and Pod-log directories: `tmpfs`, `disk` or
    /// `unknown`.
    pub agent_dirs: String,
}

impl Report {
    /// Fills the metric-derived parts from the agents' final scrapes.
    pub fn add_scrapes(&mut self, scrapes: &[Vec<Sample>]) {
        let it = || scrapes.iter().map(Vec::as_slice);
        let stage = |s: &str| {
            Percentiles::of(&Histogram::collect(
                it(),
                "tart_kubelet_pod_stage_duration_seconds",
                &[("stage", s)],
            ))
        };
        self.stages_seconds = Stages {
            pull: stage("pull"),
            clone: stage("clone"),
            boot: Percentiles::of(&Histogram::collect(
                it(),
                "tart_kubelet_vm_boot_duration_seconds",
                &[],
            )),
            provision_delay: Percentiles::of(&Histogram::collect(
                it(),
                "tart_kubelet_pod_provision_delay_seconds",
                &[],
            )),
        };
        self.agent_overhead_seconds = Percentiles::of(&Histogram::collect(
            it(),
            "tart_kubelet_pod_agent_overhead_seconds",
            &[],
        ));
        self.tart_kills = sum(it(), "tart_kubelet_tart_kills_total", &[]) as u64;
        self.tart_retries = sum(it(), "tart_kubelet_tart_retries_total", &[]) as u64;
    }

    /// Sets `ok` from the invariants.
    pub fn finish(&mut self) {
        self.ok = self.invariants.iter().all(|i| i.ok);
    }

    /// Human-readable table without the result line.
    fn render_body(&self) -> String {
        use std::fmt::Write as _;
        let ms = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{:.1} ms", v * 1e3));
        let s = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2} s"));
        let mut o = String::new();
        let _ = writeln!(
            o,
            "\n== tart-kubelet sandbox report: scenario {}, {} nodes, latency scale {} ==",
            self.scenario, self.nodes, self.latency_scale
        );
        let nice = self
            .host
            .control_plane_nice
            .map_or("unknown".to_string(), |n| n.to_string());
        let _ = writeln!(
            o,
            "host: control plane at nice {nice}, guest and Pod-log directories on {}",
            self.host.agent_dirs
        );
        let _ = writeln!(
            o,
            "pods: {} created, {} succeeded, {} failed, {} deleted in {:.1} s",
            self.pods.created,
            self.pods.succeeded,
            self.pods.failed,
            self.pods.deleted,
            self.duration_seconds
        );
        let _ = writeln!(
            o,
            "{:<18}{:>7}{:>12}{:>12}{:>12}",
            "stage", "count", "p50", "p90", "p99"
        );
        let st = &self.stages_seconds;
        for (name, p) in [
            ("pull", &st.pull),
            ("clone", &st.clone),
            ("boot", &st.boot),
            ("provision delay", &st.provision_delay),
        ] {
            let _ = writeln!(
                o,
                "{:<18}{:>7}{:>12}{:>12}{:>12}",
                name,
                p.count,
                s(p.p50),
                s(p.p90),
                s(p.p99)
            );
        }
        let oh = &self.agent_overhead_seconds;
        let _ = writeln!(
            o,
            "agent overhead per pod: p50 {}  p99 {}  ({} pods)",
            ms(oh.p50),
            ms(oh.p99),
            oh.count
        );
        let _ = writeln!(
            o,
            "tart kills {}  retries {}  API requests/node/min {:.2}",
            self.tart_kills, self.tart_retries, self.api_requests_per_node_per_minute
        );
        // A fleet's section gives the agents' spread instead of a line each.
        for a in self.agents.iter().filter(|_| self.fleet.is_none()) {
            let _ = writeln!(
                o,
                "agent {:<14} rss {:>6.1} MiB (peak {:.1})  cpu {:>5.2} %  restarts {}",
                a.node,
                a.rss_bytes as f64 / 1048576.0,
                a.peak_rss_bytes as f64 / 1048576.0,
                a.cpu_percent,
                a.restarts
            );
        }
        if let Some(g) = &self.guest_checks {
            let _ = writeln!(
                o,
                "guest secret checks: {} passed, {} rejected, {} cut short, {} unverified, {} not checked",
                g.passed, g.secret_rejected, g.cut_short, g.unverified, g.not_checked
            );
        }
        if let Some(c) = &self.chaos {
            render_chaos(&mut o, c);
        }
        if let Some(r) = &self.image_roll {
            super::roll::render(&mut o, r);
        }
        if let Some(a) = &self.api_accounting {
            requests::render(&mut o, a);
        }
        if let Some(f) = &self.fleet {
            fleet::render(&mut o, f);
        }
        for i in &self.invariants {
            let _ = writeln!(
                o,
                "invariant {:<36} {}{}",
                i.name,
                if i.ok { "ok" } else { "FAILED: " },
                if i.ok { "" } else { &i.detail }
            );
        }
        o
    }

    /// The final table, ending with the result.
    pub fn render(&self) -> String {
        let mut o = self.render_body();
        o.push_str(if self.ok {
            "result: ok\n"
        } else {
            "result: FAILED\n"
        });
        o
    }

    /// The table printed before `--keep` holds the sandbox up: the invariants checked so far,
    /// then those only teardown can check (`pending`) as pending; the result is `FAILED` only
    /// when a checked invariant failed.
    pub fn render_interim(&self, pending: &[&str]) -> String {
        use std::fmt::Write as _;
        let mut o = self.render_body();
        for name in pending {
            let _ = writeln!(o, "invariant {name:<36} pending (checked at teardown)");
        }
        let failed = self.invariants.iter().any(|i| !i.ok);
        let _ = writeln!(
            o,
            "result so far: {}",
            if failed {
                "FAILED"
            } else {
                "ok (pending the teardown checks)"
            }
        );
        o
    }
}

fn render_chaos(o: &mut String, c: &ChaosReport) {
    use std::fmt::Write as _;
    let faults: Vec<String> = c
        .faults_injected
        .iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    let _ = writeln!(o, "faults injected: {}", faults.join(", "));
    let _ = writeln!(
        o,
        "API server restarts {}: every Node's Ready the agent's again (not Unknown) at most {} after the API's return (status period {} s)",
        c.api_restarts.len(),
        c.node_ready_after_api_return_max_seconds
            .map_or("-".to_string(), |v| format!("{v:.1} s")),
        c.node_status_period_seconds
    );
    let refused = c
        .duplicate_agents
        .iter()
        .filter(|d| d.violation().is_none())
        .count();
    let _ = writeln!(
        o,
        "duplicate agents {}: {refused} refused to run (exit non-zero by themselves, no VM touched)",
        c.duplicate_agents.len()
    );
}

#[cfg(test)]
mod tests;
