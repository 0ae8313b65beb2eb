//! The `image-roll` scenario: on one fleet and one workload, the runner image rolls twice —
//! first pulled on demand by each Mac's Pods, then pre-pulled with fleet-wide pacing before
//! the Pods switch — while every simulated Mac pulls from one registry of shared bandwidth
//! (fake-tart's `registry_dir`). [`Roll`] follows the course ([`stage`]), samples the fleet on
//! every workload tick, scrapes the agents' provision-delay histograms at each turn, and at
//! the end turns all that and the Pods' pull Events into the per-strategy figures
//! ([`figures`]).

mod figures;
pub mod prepull;
pub mod stage;

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    process::Stdio,
    time::{Duration, Instant},
};

use k8s_openapi::api::events::v1::Event;
use kube::{Api, Client, api::ListParams};

use figures::{Course, Mark, PullEvent, Tick};
pub use figures::{ImageRollReport, render};
use prepull::Pacing;
use stage::{Budget, Seen, Stage, Step, Strategy};

use super::{
    Opts,
    agents::SimMac,
    metrics::{self, Histogram, Sample},
    progress::Progress,
    workload::PoolState,
};
use crate::fake::{DEFAULT_PULL_MB_PER_S, bandwidth};

/// The runner image's compressed size (fake-tart's realistic default), GB.
const IMAGE_GB: f64 = 25.0;
/// Deadline of each API request the roll makes.
const API_DEADLINE: Duration = Duration::from_secs(10);

/// The scenario's state across workload ticks.
pub struct Roll {
    stage: Stage,
    budget: Budget,
    bound: Duration,
    started: Instant,
    roll_started: Option<Instant>,
    slots: u32,
    homes: Vec<(String, PathBuf)>,
    registry: PathBuf,
    pacing: Pacing,
    registry_mb_per_s: f64,
    courses: [Course; 2],
    ticks: Vec<Tick>,
}

/// Active Pods a run keeps: one VM slot per Mac stays free, the headroom a warm pool keeps so
/// that a new job starts at once — and the measure of what a roll does to it.
pub fn pool(opts: &Opts) -> usize {
    (opts.nodes * opts.slots.saturating_sub(1)).max(1) as usize
}

/// How long a roll may last before the run moves on: twice the time the pre-pull needs at its
/// cap with every pull at the Mac's own speed, plus 30 s, and at least a minute.
pub fn roll_bound(opts: &Opts, cap: u32) -> Duration {
    let rounds = opts.nodes.div_ceil(cap.max(1));
    Duration::from_secs_f64(
        (2.0 * f64::from(rounds) * one_pull(opts).as_secs_f64() + 30.0).max(60.0),
    )
}

/// One Mac's pull of the image at its own speed (or the registry's, if slower), scaled.
pub fn one_pull(opts: &Opts) -> Duration {
    let mb_per_s = opts.registry_mb_per_s.clamp(0.001, DEFAULT_PULL_MB_PER_S);
    Duration::from_secs_f64(IMAGE_GB * 1000.0 / mb_per_s * opts.latency_scale)
}

/// Pulls the first image onto every Mac before the workload, as a fleet in service holds its
/// current image; those pulls are not part of any strategy's figures. They share the
/// registry, so the deadline allows every Mac's pull at an equal share, twice over.
pub async fn preseed(opts: &Opts, macs: &[SimMac], fake_tart: &Path) -> anyhow::Result<()> {
    let all_at_once = IMAGE_GB * 1000.0 * f64::from(opts.nodes)
        / opts
            .registry_mb_per_s
            .clamp(0.001, f64::from(opts.nodes) * DEFAULT_PULL_MB_PER_S)
        * opts.latency_scale;
    let deadline = Duration::from_secs_f64(2.0 * all_at_once + 60.0);
    let pulls = macs.iter().map(|m| {
        let mut cmd = m.agent.home().command(fake_tart);
        cmd.args(["pull", stage::IMAGES[0]])
            .stdin(Stdio::null())
            .kill_on_drop(true);
        async move { tokio::time::timeout(deadline, cmd.output()).await }
    });
    for (m, out) in macs.iter().zip(futures::future::join_all(pulls).await) {
        let out = out.map_err(|_| {
            anyhow::anyhow!(
                "pre-seeding {} on {}: no end within {deadline:?}",
                stage::IMAGES[0],
                m.node
            )
        })??;
        anyhow::ensure!(
            out.status.success(),
            "pre-seeding {} on {}: {}",
            stage::IMAGES[0],
            m.node,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

impl Roll {
    /// A roll over `macs`, all pulling through `registry`; the workload starts now.
    pub fn new(opts: &Opts, macs: &[SimMac], registry: &Path) -> Roll {
        let pacing = Pacing {
            max_pulls: opts.max_concurrent_pulls,
            max_percent: opts.max_concurrent_percent,
        };
        let mut courses: [Course; 2] = Default::default();
        courses[0].started = Some(Mark::default());
        Roll {
            stage: Stage::Before(Strategy::OnDemand),
            budget: Budget::new(opts.pods),
            bound: roll_bound(opts, pacing.cap(opts.nodes)),
            started: Instant::now(),
            roll_started: None,
            slots: opts.slots,
            homes: macs
                .iter()
                .map(|m| (m.node.clone(), m.agent.home().path().to_path_buf()))
                .collect(),
            registry: registry.to_path_buf(),
            pacing,
            registry_mb_per_s: opts.registry_mb_per_s,
            courses,
            ticks: Vec::new(),
        }
    }

    /// The image of the Pods created now.
    pub fn pod_image(&self) -> &'static str {
        stage::pod_image(self.stage)
    }

    /// Pods the workload may have created by now (it waits there for the course to move on).
    pub fn creation_cap(&self) -> u64 {
        self.budget.creation_cap(self.stage)
    }

    /// Samples the fleet and takes the course's next step, if one is due.
    pub async fn tick(
        &mut self,
        admin: &Client,
        macs: &[SimMac],
        pods: &PoolState,
        progress: &mut Progress,
    ) -> anyhow::Result<()> {
        let image = self.pod_image();
        let busy = busy_slots(pods);
        let free_warm_slots = self
            .homes
            .iter()
            .filter(|(_, home)| holds(home, image))
            .map(|(node, _)| {
                self.slots
                    .saturating_sub(busy.get(node.as_str()).copied().unwrap_or(0))
            })
            .sum();
        self.ticks.push(Tick {
            at: self.started.elapsed().as_secs_f64(),
            free_warm_slots,
            active_pulls: bandwidth::active_pulls(&self.registry) as u32,
        });
        let fleet_holds_next = match self.stage {
            Stage::Rolling(s) => self.homes.iter().all(|(_, h)| holds(h, s.images().1)),
            _ => false,
        };
        let seen = Seen {
            created: pods.created,
            fleet_holds_next,
            rolling_for: self.roll_started.map_or(Duration::ZERO, |t| t.elapsed()),
        };
        let Some(step) = stage::next(self.stage, &self.budget, &seen, self.bound) else {
            return Ok(());
        };
        let at = self.mark(macs).await;
        match step {
            Step::BeginRoll(s) => {
                if s == Strategy::Prepull {
                    prepull::announce(admin, s.images().1, &self.pacing, API_DEADLINE).await?;
                    self.courses[s.index()].pull_cap =
                        Some(self.pacing.cap(self.homes.len() as u32));
                }
                let c = &mut self.courses[s.index()];
                c.roll_began = Some(at);
                c.created_at_roll = pods.created;
                self.roll_started = Some(Instant::now());
                progress.line(&format!(
                    "image roll, {}: rolling to {}",
                    s.title(),
                    s.images().1
                ));
            }
            Step::EndRoll {
                strategy,
                completed,
            } => {
                let c = &mut self.courses[strategy.index()];
                c.roll_ended = Some(at);
                c.completed = completed;
                self.roll_started = None;
                progress.line(&format!(
                    "image roll, {}: {} after {:.1} s",
                    strategy.title(),
                    if completed {
                        "every Mac holds the new image"
                    } else {
                        "bound passed before every Mac held the new image"
                    },
                    seen.rolling_for.as_secs_f64()
                ));
            }
            Step::EndOnDemand => {
                let c = &mut self.courses[Strategy::OnDemand.index()];
                c.ended = Some(at.clone());
                c.created_at_end = pods.created;
                self.courses[Strategy::Prepull.index()].started = Some(at);
            }
        }
        self.stage = stage::apply(step);
        Ok(())
    }

    /// Ends the current part at the workload's end (`last_scrapes`: the agents' final
    /// scrapes) and computes every strategy's figures, reading the Pods' pull Events.
    pub async fn finish(
        mut self,
        admin: &Client,
        ns: &str,
        pods: &PoolState,
        last_scrapes: &[Vec<Sample>],
    ) -> ImageRollReport {
        let current = stage::strategy(self.stage);
        let c = &mut self.courses[current.index()];
        c.ended = Some(Mark {
            at: self.started.elapsed().as_secs_f64(),
            provision_delay: provision_delay(last_scrapes),
        });
        c.created_at_end = pods.created;
        let events = pull_events(admin, ns).await;
        let waited = figures::waited_on_pull(&events);
        ImageRollReport {
            registry_mb_per_s: self.registry_mb_per_s,
            mac_mb_per_s: DEFAULT_PULL_MB_PER_S,
            roll_bound_seconds: self.bound.as_secs_f64(),
            strategies: Strategy::ALL
                .iter()
                .filter(|s| self.courses[s.index()].started.is_some())
                .map(|s| figures::figures(*s, &self.courses[s.index()], &self.ticks, &waited))
                .collect(),
        }
    }

    /// Now, with the agents' provision-delay histogram.
    async fn mark(&self, macs: &[SimMac]) -> Mark {
        let mut scrapes = Vec::new();
        for m in macs {
            if let Ok(text) = m.agent.metrics().await {
                scrapes.push(metrics::parse(&text));
            }
        }
        Mark {
            at: self.started.elapsed().as_secs_f64(),
            provision_delay: provision_delay(&scrapes),
        }
    }
}

fn provision_delay(scrapes: &[Vec<Sample>]) -> Histogram {
    Histogram::collect(
        scrapes.iter().map(Vec::as_slice),
        "tart_kubelet_pod_provision_delay_seconds",
        &[],
    )
}

/// Pods bound to each node and not ended: the VM slots they take.
fn busy_slots(pods: &PoolState) -> BTreeMap<&str, u32> {
    let mut busy = BTreeMap::new();
    for (pod, node) in &pods.nodes {
        if pods.present.contains_key(pod) && !pods.ended.contains_key(pod) {
            *busy.entry(node.as_str()).or_default() += 1;
        }
    }
    busy
}

/// Whether the `TART_HOME` holds `image` (`host/ns:tag`): its tag links to a whole digest
/// entry of the OCI cache (docs/reference/tart-cli.md §1.1), which happens only when a pull has
/// finished.
pub fn holds(home: &Path, image: &str) -> bool {
    tag_link(home, image).is_some_and(|link| {
        std::fs::canonicalize(link).is_ok_and(|d| d.join("config.json").is_file())
    })
}

/// The tag's link in the `TART_HOME`'s OCI cache, for `image` (`host/ns:tag`).
pub fn tag_link(home: &Path, image: &str) -> Option<PathBuf> {
    let (repo, tag) = image.rsplit_once(':')?;
    Some(home.join("cache/OCIs").join(repo).join(tag))
}

/// The `Pulling`/`Pulled` Events of the namespace's Pods (an empty list if the API fails: the
/// figures then count no waits, which the summary's pull figures would contradict).
async fn pull_events(admin: &Client, ns: &str) -> Vec<PullEvent> {
    let api: Api<Event> = Api::namespaced(admin.clone(), ns);
    let Ok(Ok(list)) = tokio::time::timeout(API_DEADLINE, api.list(&ListParams::default())).await
    else {
        return Vec::new();
    };
    list.items
        .into_iter()
        .filter_map(|e| {
            let reason = e.reason?;
            let pod = e.regarding?.name?;
            (reason == "Pulling" || reason == "Pulled").then(|| PullEvent {
                pod,
                reason,
                note: e.note.unwrap_or_default(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests;
