//! The `fleet` scenario: many simulated Macs behind one control plane, a steady arrival of CI
//! runner Pods, and one image roll with pre-pull across the fleet while the Pods keep coming.
//! [`Fleet`] paces the arrivals ([`course`]), drives the roll (writes the pre-pull ConfigMap,
//! follows the Node Leases' tokens ([`tokens`]) and the registry's pulls in the background,
//! switches the Pods once every Mac holds the new image), watches the Pods ([`pods`]), counts
//! each Pod's end from that watch ([`ends`]) and samples the CPU ([`cpu`]); at the end it reads the audit log ([`audit`]) and when each Mac's
//! pull of the new image finished (its tag link's time), and builds the report's `fleet`
//! section.

pub mod audit;
pub mod checks;
pub mod course;
pub mod cpu;
pub mod ends;
pub mod pods;
mod sampler;
pub mod tokens;

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use k8s_openapi::jiff::Timestamp;
use kube::Client;

use super::{
    NAMESPACE, Opts,
    agents::SimMac,
    metrics::Sample,
    progress::Progress,
    report::{
        AgentUsage,
        fleet::{AgentSpread, FleetReport, FleetRoll, Spread},
    },
    roll::{self, prepull::Pacing, stage::IMAGES},
    workload::{PoolState, Runners},
};
use crate::cluster::ControlPlane;
use course::{Phase, Seen};

/// The agents' retry while an image waits for a token (docs/images.md, "Pre-pull, declared by
/// operators").
const TOKEN_RETRY: Duration = Duration::from_secs(3);
/// Deadline of each API request the fleet makes.
const API_DEADLINE: Duration = Duration::from_secs(10);
/// The agents' identity in the sandbox (start.rs mints it).
pub const AGENTS_USER: &str = "tart-kubelet-sandbox";

/// The scenario's state across workload ticks.
pub struct Fleet {
    rate: f64,
    total: u64,
    slots: u32,
    started: Instant,
    /// When the last Pod was created, and how many there were then.
    last_created: (Instant, u64),
    phase: Phase,
    roll_at: u64,
    bound: course::Bound,
    /// Macs holding the new image, and since when that many.
    holding: (usize, Instant),
    pacing: Pacing,
    /// The ConfigMap written: when (both clocks) and after how many Pods.
    began: Option<(Instant, Timestamp, u64)>,
    /// The roll ended: when (both clocks), and Pods created by then.
    ended: Option<(Instant, Timestamp, u64)>,
    homes: Vec<(String, PathBuf)>,
    registry: PathBuf,
    /// Follows the roll from its beginning.
    sampler: Option<sampler::Sampler>,
    watch: pods::PodWatch,
    pids: [Option<u32>; 4],
    cpu_start: cpu::Sample,
}

/// What the end of the workload left to report on.
pub struct Ended {
    cpu: cpu::Sample,
    /// The audit log's time at the end (the window's end).
    until: String,
    threads_and_files: Vec<(u64, u64)>,
}

impl Fleet {
    /// The scenario over `macs`, pulling through `registry`, its Pods running `runners`; the
    /// workload starts now.
    pub fn new(
        opts: &Opts,
        cp: &ControlPlane,
        admin: &Client,
        macs: &[SimMac],
        registry: &Path,
        runners: &Runners,
    ) -> Fleet {
        let pacing = Pacing {
            max_pulls: opts.max_concurrent_pulls,
            max_percent: opts.max_concurrent_percent,
        };
        let cap = pacing.cap(opts.nodes);
        let rounds = opts.nodes.div_ceil(cap.max(1));
        let bound = course::Bound {
            roll: roll::roll_bound(opts, cap)
                + Duration::from_secs(opts.prepull_period_seconds)
                + TOKEN_RETRY * rounds,
            stall: roll::one_pull(opts) * 4 + TOKEN_RETRY * 2 + Duration::from_secs(30),
        };
        let pids = cpu::COMPONENTS.map(|c| cp.pid_of(c));
        let started = Instant::now();
        Fleet {
            rate: opts.arrival_per_second,
            total: opts.pods,
            slots: opts.nodes * opts.slots,
            started,
            last_created: (started, 0),
            phase: Phase::Before,
            roll_at: course::roll_at(opts.pods),
            bound,
            holding: (0, started),
            pacing,
            began: None,
            ended: None,
            homes: macs
                .iter()
                .map(|m| (m.node.clone(), m.agent.home().path().to_path_buf()))
                .collect(),
            registry: registry.to_path_buf(),
            sampler: None,
            watch: pods::PodWatch::start(
                admin,
                NAMESPACE,
                runners.job.as_ref().map(|_| runners.guest_dirs.clone()),
            ),
            pids,
            cpu_start: cpu::sample(0.0, &pids, &agent_pids(macs)),
        }
    }

    /// The image of the Pods created now.
    pub fn pod_image(&self) -> &'static str {
        if self.phase == Phase::Rolled {
            IMAGES[1]
        } else {
            IMAGES[0]
        }
    }

    /// Pods due by now at the arrival rate (the last sixth only once the roll has ended).
    pub fn due(&self) -> u64 {
        let due = course::due(self.rate, self.started.elapsed(), self.total);
        if self.phase.settled() {
            due
        } else {
            due.min(course::before_settled(self.total))
        }
    }

    /// The roll is over (the workload may end).
    pub fn settled(&self) -> bool {
        self.phase.settled()
    }

    /// Counts in `pods` every Pod's end the fleet's watch saw, those the controller-manager's
    /// Pod garbage collector deleted before a workload tick saw them included.
    pub fn count(&self, pods: &mut PoolState) {
        self.watch.count(pods);
    }

    /// Samples the roll and takes its next step, if one is due.
    pub async fn tick(
        &mut self,
        admin: &Client,
        pods: &PoolState,
        progress: &mut Progress,
    ) -> anyhow::Result<()> {
        if pods.created > self.last_created.1 {
            self.last_created = (Instant::now(), pods.created);
        }
        let holding = if self.phase == Phase::Rolling {
            self.homes
                .iter()
                .filter(|(_, h)| roll::holds(h, IMAGES[1]))
                .count()
        } else {
            0
        };
        if holding > self.holding.0 {
            self.holding = (holding, Instant::now());
        }
        let since = |b: Option<Instant>| b.map_or(Duration::ZERO, |b| b.elapsed());
        let seen = Seen {
            created: pods.created,
            fleet_holds: self.phase == Phase::Rolling && holding == self.homes.len(),
            rolling_for: since(self.began.map(|b| b.0)),
            idle_for: since(self.began.map(|b| b.0.max(self.holding.1))),
        };
        let next = course::next(self.phase, &seen, self.roll_at, self.bound);
        if next == self.phase {
            return Ok(());
        }
        match next {
            Phase::Rolling => {
                self.sampler = Some(sampler::Sampler::start(admin, self.registry.clone()));
                roll::prepull::announce(admin, IMAGES[1], &self.pacing, API_DEADLINE).await?;
                self.began = Some((Instant::now(), Timestamp::now(), pods.created));
                progress.line(&format!(
                    "fleet: pre-pull of {} announced after {} Pods (cap {})",
                    IMAGES[1],
                    pods.created,
                    self.pacing.cap(self.homes.len() as u32)
                ));
            }
            Phase::Rolled | Phase::GaveUp => {
                self.ended = Some((Instant::now(), Timestamp::now(), pods.created));
                progress.line(&format!(
                    "fleet: {} after {:.1} s",
                    if next == Phase::Rolled {
                        "every Mac holds the new image; Pods switch to it"
                    } else {
                        "the roll's bound passed before every Mac held the new image"
                    },
                    seen.rolling_for.as_secs_f64()
                ));
            }
            Phase::Before => {}
        }
        self.phase = next;
        Ok(())
    }

    /// The end of the workload: the last CPU sample, each agent's threads and open files.
    pub fn end(&self, macs: &[SimMac]) -> Ended {
        let at = self.started.elapsed().as_secs_f64();
        Ended {
            cpu: cpu::sample(at, &self.pids, &agent_pids(macs)),
            until: super::probe::now_rfc3339(),
            threads_and_files: agent_pids(macs)
                .into_iter()
                .map(threads_and_files)
                .collect(),
        }
    }

    /// The `fleet` section: `audit_log` is the API server's audit log text and the workload
    /// began at `since` in it; `usage` is the agents' resource use, `scrapes` their last
    /// metrics by node.
    pub fn report(
        self,
        opts: &Opts,
        ended: &Ended,
        audit_log: &str,
        since: &str,
        usage: &[AgentUsage],
        scrapes: &[(String, Vec<Sample>)],
    ) -> FleetReport {
        let events = audit::events(audit_log, since, &ended.until);
        let window = match (since.parse::<Timestamp>(), ended.until.parse::<Timestamp>()) {
            (Ok(a), Ok(b)) => b.duration_since(a).as_secs_f64(),
            _ => ended.cpu.at,
        };
        let api = audit::load(&events, window, AGENTS_USER, opts.nodes);
        let api_during_roll = match self.began {
            Some((_, from, _)) => {
                let to = self
                    .ended
                    .map_or(ended.until.clone(), |e| audit::stamp(e.1));
                let during: Vec<audit::Event> = events
                    .iter()
                    .filter(|e| e.request_received_timestamp >= audit::stamp(from))
                    .filter(|e| e.request_received_timestamp < to)
                    .cloned()
                    .collect();
                let secs = to
                    .parse::<Timestamp>()
                    .map_or(0.0, |t| t.duration_since(from).as_secs_f64());
                Some(audit::load(&during, secs, AGENTS_USER, opts.nodes))
            }
            None => None,
        };
        let times = self.watch.times();
        let created_span = self.last_created.0.duration_since(self.started);
        FleetReport {
            arrival_per_second: self.rate,
            achieved_per_second: self.last_created.1 as f64 / created_span.as_secs_f64().max(1e-3),
            slots: self.slots,
            api,
            api_during_roll,
            watch_delay_seconds: Spread::of(&audit::watch_delays(&events, NAMESPACE, AGENTS_USER)),
            scheduling_seconds: Spread::of(&pods::between(&times, |t| t.created, |t| t.bound)),
            scheduler_to_running_seconds: Spread::of(&pods::between(
                &times,
                |t| t.bound,
                |t| t.running,
            )),
            roll: self.roll_figures(scrapes),
            agents: agent_spread(usage, &ended.threads_and_files),
            cpu: cpu::shares(&self.cpu_start, &ended.cpu, cores()),
        }
    }

    fn roll_figures(&self, scrapes: &[(String, Vec<Sample>)]) -> FleetRoll {
        let nodes: Vec<String> = self.homes.iter().map(|(n, _)| n.clone()).collect();
        let refusals: BTreeMap<String, u64> = scrapes
            .iter()
            .map(|(node, s)| {
                let n = super::metrics::sum(
                    [s.as_slice()],
                    "tart_kubelet_prepull_token_waits_total",
                    &[],
                );
                (node.clone(), n as u64)
            })
            .collect();
        let record = self
            .sampler
            .as_ref()
            .map(sampler::Sampler::record)
            .unwrap_or_default();
        let held: BTreeMap<String, Timestamp> = self
            .homes
            .iter()
            .filter_map(|(node, home)| Some((node.clone(), pulled_at(home, IMAGES[1])?)))
            .collect();
        let per_node = match self.began {
            Some((_, announced, _)) => record.tokens.per_node(&nodes, announced, &held, &refusals),
            None => BTreeMap::new(),
        };
        let (token_wait_seconds, pull_seconds, refusals, nodes_without_token) =
            tokens::spreads(&per_node);
        let completed = self.phase == Phase::Rolled;
        FleetRoll {
            image_from: IMAGES[0].into(),
            image_to: IMAGES[1].into(),
            began_after_pods: self.began.map(|b| b.2),
            pull_cap: self.pacing.cap(self.homes.len() as u32),
            completed,
            duration_seconds: self.began.map(|(b, ..)| {
                self.ended
                    .map_or(b.elapsed(), |(e, ..)| e.duration_since(b))
                    .as_secs_f64()
            }),
            pods_on_new_image: match (completed, self.ended) {
                (true, Some((.., at))) => self.last_created.1.saturating_sub(at),
                _ => 0,
            },
            token_wait_seconds,
            pull_seconds,
            refusals,
            nodes_without_token,
            peak_concurrent_pulls: record.peak_pulls,
            peak_prepull_tokens: record.tokens.peak_tokens,
            nodes: per_node,
        }
    }
}

/// When the pull of `image` into `home` finished: its tag link's time (the pull makes the link
/// last), if the home holds it.
fn pulled_at(home: &Path, image: &str) -> Option<Timestamp> {
    if !roll::holds(home, image) {
        return None;
    }
    let t = std::fs::symlink_metadata(roll::tag_link(home, image)?)
        .ok()?
        .modified()
        .ok()?;
    Timestamp::try_from(t).ok()
}

fn agent_pids(macs: &[SimMac]) -> Vec<u32> {
    macs.iter().filter_map(|m| m.agent.pid()).collect()
}

/// Threads (`/proc/<pid>/status`) and open file descriptors of a live process.
fn threads_and_files(pid: u32) -> (u64, u64) {
    let threads = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Threads:"))
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(0);
    let files = std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count() as u64);
    (threads, files)
}

/// The spreads of the agents' RSS, peak RSS, CPU, threads and open files.
pub fn agent_spread(usage: &[AgentUsage], threads_and_files: &[(u64, u64)]) -> AgentSpread {
    let mib = |b: u64| b as f64 / 1_048_576.0;
    let of = |f: &dyn Fn(&AgentUsage) -> f64| Spread::of(&usage.iter().map(f).collect::<Vec<_>>());
    AgentSpread {
        rss_mib: of(&|a| mib(a.rss_bytes)),
        peak_rss_mib: of(&|a| mib(a.peak_rss_bytes)),
        cpu_percent: of(&|a| a.cpu_percent),
        threads: Spread::of(
            &threads_and_files
                .iter()
                .map(|t| t.0 as f64)
                .collect::<Vec<_>>(),
        ),
        open_files: Spread::of(
            &threads_and_files
                .iter()
                .map(|t| t.1 as f64)
                .collect::<Vec<_>>(),
        ),
    }
}

/// CPUs this process may run on.
fn cores() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
}

/// The API server's audit log of `cp`, rotated parts first (it rotates at 200 MB,
/// tests/cluster/start.sh).
pub fn audit_text(cp: &ControlPlane) -> String {
    let mut files: Vec<PathBuf> = std::fs::read_dir(cp.logs_dir())
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| {
                    let n = p.file_name().unwrap_or_default().to_string_lossy();
                    n.starts_with("audit") && n.ends_with(".log")
                })
                .collect()
        })
        .unwrap_or_default();
    // `audit.log` is the current part; rotated ones carry their time in the name.
    files.sort_by_key(|p| (p.ends_with("audit.log"), p.clone()));
    files
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}
