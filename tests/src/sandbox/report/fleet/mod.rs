//! The `fleet` scenario's section of the report (`fleet` in the JSON, keys in docs/sandbox.md):
//! the API load by verb and by user, the watch delay, scheduling and scheduler-to-running
//! latencies, the pre-pull roll's token fairness, the spread of the agents' resource use and
//! where the machine's CPU went. The figures are built by [`crate::sandbox::fleet`]; the
//! spreads and the text rendering are pure.

use std::collections::BTreeMap;

use serde::Serialize;

/// A distribution over a set of values (nearest-rank percentiles; `None` when empty).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Spread {
    /// Values.
    pub count: usize,
    pub min: Option<f64>,
    /// Median.
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p99: Option<f64>,
    pub max: Option<f64>,
}

impl Spread {
    /// Of `values` (NaNs are left out).
    pub fn of(values: &[f64]) -> Spread {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
        v.sort_by(f64::total_cmp);
        let rank = |q: f64| {
            // Nearest rank: the smallest value with at least q of the values at or below it.
            let i = (q * v.len() as f64).ceil() as usize;
            v.get(i.clamp(1, v.len().max(1)) - 1).copied()
        };
        Spread {
            count: v.len(),
            min: v.first().copied(),
            p50: rank(0.5),
            p90: rank(0.9),
            p99: rank(0.99),
            max: v.last().copied(),
        }
    }
}

/// Requests to the API server over the workload, from its audit log.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct ApiLoad {
    /// The window the rates are over, seconds.
    pub window_seconds: f64,
    /// Requests completed in the window (every user), per second.
    pub requests_per_second: f64,
    /// The busiest 10 s of the window, requests per second.
    pub peak_requests_per_second_10s: f64,
    /// Per second by verb (`get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, ...),
    /// every user.
    pub by_verb: BTreeMap<String, f64>,
    /// Per second by who made them: `agents`, `scheduler`, `controller_manager`, `sandbox`
    /// (the workload and its observers), `other`.
    pub by_user: BTreeMap<String, f64>,
    /// The agents' requests per second by verb.
    pub agents_by_verb: BTreeMap<String, f64>,
    /// The agents' requests per node per minute.
    pub agents_per_node_per_minute: f64,
}

/// One node's part in the pre-pull roll.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct NodeRoll {
    /// ConfigMap written → the token its pull ran under was taken (`None`: no token seen).
    pub token_wait_seconds: Option<f64>,
    /// That token taken → the node holds the image (`None`: not both seen).
    pub pull_seconds: Option<f64>,
    /// Times it found the fleet at the cap (`tart_kubelet_prepull_token_waits_total`).
    pub refusals: u64,
}

/// The image roll with pre-pull across the fleet.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct FleetRoll {
    pub image_from: String,
    pub image_to: String,
    /// Pods created when the pre-pull ConfigMap was written (`None`: the roll never began).
    pub began_after_pods: Option<u64>,
    /// Fleet-wide cap on concurrent pre-pulls.
    pub pull_cap: u32,
    /// Every Mac held the new image before the bound.
    pub completed: bool,
    /// ConfigMap written → every Mac holds the image (or the bound passed).
    pub duration_seconds: Option<f64>,
    /// Pods created with the new image.
    pub pods_on_new_image: u64,
    /// Per node: ConfigMap written → token taken.
    pub token_wait_seconds: Spread,
    /// Per node: token taken → image held.
    pub pull_seconds: Spread,
    /// Per node: refusals at the cap.
    pub refusals: Spread,
    /// Nodes on which no pre-pull token was seen.
    pub nodes_without_token: u32,
    /// Most pulls in the shared registry at once (sampled each tick).
    pub peak_concurrent_pulls: u32,
    /// Most live pre-pull tokens on the Node Leases at once (sampled each tick; a token taken
    /// past the cap is given back, so this may pass the cap briefly).
    pub peak_prepull_tokens: u32,
    /// By node.
    pub nodes: BTreeMap<String, NodeRoll>,
}

/// The spread of the agents' resource use at the end of the workload.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct AgentSpread {
    /// `VmRSS`, MiB.
    pub rss_mib: Spread,
    /// `VmHWM`, MiB.
    pub peak_rss_mib: Spread,
    /// CPU time over the agent's life, percent of one core.
    pub cpu_percent: Spread,
    /// OS threads.
    pub threads: Spread,
    /// Open file descriptors.
    pub open_files: Spread,
}

/// Where the machine's CPU went over the workload, percent of one core (200 = both cores of a
/// 2-core machine).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct CpuShares {
    pub window_seconds: f64,
    /// Cores of the machine.
    pub cores: u32,
    /// 1-minute load average at the workload's start and end.
    pub load_average_start: f64,
    pub load_average_end: f64,
    /// Every process on the machine (`/proc/stat`).
    pub machine_busy: f64,
    pub kube_apiserver: f64,
    pub etcd: f64,
    pub kube_scheduler: f64,
    pub kube_controller_manager: f64,
    /// The agents themselves, summed.
    pub agents: f64,
    /// Their reaped children: tart commands, and the simulated VMs with their guests' jobs.
    pub agents_children: f64,
    /// The sandbox process (workload, watchers, samplers).
    pub sandbox: f64,
    /// The rest: other users of the machine, and children not yet reaped.
    pub rest: f64,
}

/// The `fleet` section.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct FleetReport {
    /// The arrival rate asked for, Pods per second.
    pub arrival_per_second: f64,
    /// Pods created over the span from the first creation to the last, per second.
    pub achieved_per_second: f64,
    /// VM slots across the fleet (the most Pods active at once).
    pub slots: u32,
    pub api: ApiLoad,
    /// The same from the pre-pull ConfigMap's write to the roll's end (`null`: no roll).
    pub api_during_roll: Option<ApiLoad>,
    /// Per Pod: bound (the binding's completion) → the agent's first request about it, from
    /// the audit log: the watch's delivery plus the agent's reaction.
    pub watch_delay_seconds: Spread,
    /// Per Pod: seen created → seen bound, by the sandbox's own Pod watch.
    pub scheduling_seconds: Spread,
    /// Per Pod: seen bound → seen `Running`, by the same watch.
    pub scheduler_to_running_seconds: Spread,
    pub roll: FleetRoll,
    pub agents: AgentSpread,
    pub cpu: CpuShares,
}

/// Appends the section to the printed report.
pub fn render(o: &mut String, f: &FleetReport) {
    use std::fmt::Write as _;
    let a = &f.api;
    let _ = writeln!(
        o,
        "fleet: {} slots; arrivals {:.2}/s asked, {:.2}/s achieved",
        f.slots, f.arrival_per_second, f.achieved_per_second
    );
    let _ = writeln!(
        o,
        "API: {:.1} req/s over {:.0} s (peak 10 s: {:.1}/s); agents {:.2} req/node/min",
        a.requests_per_second,
        a.window_seconds,
        a.peak_requests_per_second_10s,
        a.agents_per_node_per_minute
    );
    let _ = writeln!(o, "  by verb: {}", rates(&a.by_verb));
    let _ = writeln!(o, "  by user: {}", rates(&a.by_user));
    let _ = writeln!(o, "  agents by verb: {}", rates(&a.agents_by_verb));
    if let Some(r) = &f.api_during_roll {
        let _ = writeln!(
            o,
            "  during the roll ({:.0} s): {:.1} req/s; agents by verb: {}",
            r.window_seconds,
            r.requests_per_second,
            rates(&r.agents_by_verb)
        );
    }
    for (name, s) in [
        (
            "watch delay (bound -> agent's first request)",
            &f.watch_delay_seconds,
        ),
        ("scheduling (created -> bound)", &f.scheduling_seconds),
        (
            "scheduler to running (bound -> Running)",
            &f.scheduler_to_running_seconds,
        ),
    ] {
        let _ = writeln!(o, "{name}: {}", spread(s, 1e3, "ms"));
    }
    let r = &f.roll;
    let _ = writeln!(
        o,
        "pre-pull roll {} -> {}: cap {}, {}, {} Pods on the new image",
        r.image_from,
        r.image_to,
        r.pull_cap,
        match (r.began_after_pods, r.duration_seconds) {
            (None, _) => "never began".to_string(),
            (Some(p), d) => format!(
                "began after {p} Pods, {} in {}",
                if r.completed {
                    "completed"
                } else {
                    "NOT completed"
                },
                d.map_or("-".into(), |d| format!("{d:.1} s"))
            ),
        },
        r.pods_on_new_image
    );
    let _ = writeln!(
        o,
        "  token wait per node: {}",
        spread(&r.token_wait_seconds, 1.0, "s")
    );
    let _ = writeln!(o, "  pull per node: {}", spread(&r.pull_seconds, 1.0, "s"));
    let _ = writeln!(
        o,
        "  refusals per node: {}; no token seen on {} nodes; peak pulls {}, peak tokens {}",
        spread(&r.refusals, 1.0, ""),
        r.nodes_without_token,
        r.peak_concurrent_pulls,
        r.peak_prepull_tokens
    );
    let g = &f.agents;
    for (name, s, unit) in [
        ("rss", &g.rss_mib, "MiB"),
        ("peak rss", &g.peak_rss_mib, "MiB"),
        ("cpu", &g.cpu_percent, "%"),
        ("threads", &g.threads, ""),
        ("open files", &g.open_files, ""),
    ] {
        let _ = writeln!(o, "agents' {name}: {}", spread(s, 1.0, unit));
    }
    let c = &f.cpu;
    let _ = writeln!(
        o,
        "CPU over {:.0} s, % of one core ({} cores; load {:.1} -> {:.1}): machine {:.0}, apiserver {:.0}, etcd {:.0}, scheduler {:.0}, controller-manager {:.0}, agents {:.0}, their tart commands and VMs {:.0}, sandbox {:.0}, rest {:.0}",
        c.window_seconds,
        c.cores,
        c.load_average_start,
        c.load_average_end,
        c.machine_busy,
        c.kube_apiserver,
        c.etcd,
        c.kube_scheduler,
        c.kube_controller_manager,
        c.agents,
        c.agents_children,
        c.sandbox,
        c.rest
    );
}

fn rates(m: &BTreeMap<String, f64>) -> String {
    m.iter()
        .map(|(k, v)| format!("{k} {v:.2}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `min/p50/p90/p99/max` of `s`, each multiplied by `factor`, in `unit`.
fn spread(s: &Spread, factor: f64, unit: &str) -> String {
    let f = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{:.1}", v * factor));
    format!(
        "min {} p50 {} p90 {} p99 {} max {} {unit} (n={})",
        f(s.min),
        f(s.p50),
        f(s.p90),
        f(s.p99),
        f(s.max),
        s.count
    )
}

#[cfg(test)]
mod tests;
