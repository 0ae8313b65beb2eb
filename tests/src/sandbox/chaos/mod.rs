//! The `chaos` scenario's fault injector: at random intervals, on a random simulated Mac, one
//! of the [`Fault`] kinds. fake-tart faults are knob rules consumed once, so each fires exactly
//! once wherever the next matching call lands; agent-level faults (an agent SIGKILLed and
//! restarted, a duplicate agent, an API server restart) are serialised by [`fault::blocked`]
//! and need the agents concerned to be ready, so each one's outcome is measured on its own.

pub mod api_restart;
pub mod duplicate;
pub mod fault;

use std::{
    collections::BTreeMap,
    time::{Duration, Instant},
};

use kube::Client;
use rand::{Rng, SeedableRng, rngs::StdRng};
use serde::Serialize;

use super::{Opts, agents::SimMac, metrics, progress::Progress};
use crate::{cluster::ControlPlane, fake::Rule};
use api_restart::{ApiRestartRecord, ApiRestarts};
use duplicate::{Duplicate, DuplicateRecord};
pub use fault::Fault;

/// Agent flags that keep injected hangs short: a hung clone is killed after 5 s, a stalled
/// pull after 3 s without progress.
pub fn agent_args() -> Vec<String> {
    ["--tart-deadline", "clone=5s", "--pull-stall-window", "3s"]
        .map(String::from)
        .to_vec()
}

/// The node-monitor grace `start.sh` gives the controller-manager unless told otherwise.
const DEFAULT_NODE_GRACE: Duration = Duration::from_secs(16);

/// What the chaos scenario adds to the report.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct ChaosReport {
    /// Faults injected, by kind (`hang_clone`, ..., `api_restart`, `duplicate_agent`).
    pub faults_injected: BTreeMap<&'static str, u64>,
    /// The agents' `--node-status-check-interval`, seconds: the bound on the Nodes' recovery
    /// after an API server restart.
    pub node_status_period_seconds: f64,
    /// The slowest Node recovery over every API restart, seconds (`null`: no restart, or a
    /// Node that did not recover).
    pub node_ready_after_api_return_max_seconds: Option<f64>,
    /// Every API server restart.
    pub api_restarts: Vec<ApiRestartRecord>,
    /// Every duplicate agent started.
    pub duplicate_agents: Vec<DuplicateRecord>,
}

/// The injector's state.
pub struct Chaos {
    rng: StdRng,
    next: Instant,
    crash_until: Vec<(usize, Instant)>,
    earlier: Vec<Vec<metrics::Sample>>,
    injected: Vec<Fault>,
    api: ApiRestarts,
    duplicate: Option<Duplicate>,
    duplicates: Vec<DuplicateRecord>,
}

impl Chaos {
    /// A seeded injector; the first fault comes a few seconds after `now`.
    pub fn new(seed: u64, now: Instant) -> Self {
        Self {
            rng: StdRng::seed_from_u64(seed),
            next: now + Duration::from_secs(3),
            crash_until: Vec::new(),
            earlier: Vec::new(),
            injected: Vec::new(),
            api: ApiRestarts::default(),
            duplicate: None,
            duplicates: Vec::new(),
        }
    }

    /// The API server is down: the workload cannot observe or create Pods.
    pub fn api_down(&self) -> bool {
        self.api.down()
    }

    /// An API server restart is in progress (down, or the Nodes' recovery being observed):
    /// a failed workload step is expected and retried.
    pub fn api_restarting(&self) -> bool {
        self.api.busy()
    }

    /// Moves faults in progress on (ends crash windows, starts the API server after its
    /// outage, collects a duplicate that exited) and injects a fault when one is due.
    ///
    /// # Errors
    /// Knob writes, an agent restart or a duplicate's spawn failing.
    pub async fn tick(
        &mut self,
        opts: &Opts,
        cp: &ControlPlane,
        admin: &Client,
        macs: &mut [SimMac],
        progress: &mut Progress,
    ) -> anyhow::Result<()> {
        let now = Instant::now();
        self.end_crash_windows(opts, macs, now)?;
        let nodes: Vec<String> = macs.iter().map(|m| m.node.clone()).collect();
        let window = super::agents::NODE_STATUS_PERIOD * 3;
        if let Some(line) = self.api.poll(cp, admin, &nodes, window).await {
            progress.line(&line);
        }
        if let Some(d) = &mut self.duplicate
            && let Some(rec) = d.poll().await
        {
            progress.line(&format!(
                "chaos: duplicate agent for {} ended after {:.1} s with exit code {:?}: {}",
                rec.node, rec.seconds, rec.exit_code, rec.message
            ));
            self.duplicates.push(rec);
            self.duplicate = None;
        }
        if now < self.next || macs.is_empty() {
            return Ok(());
        }
        self.next = now + Duration::from_millis(self.rng.random_range(1500..4000));
        let i = self.rng.random_range(0..macs.len());
        let fault = Fault::ALL[self.rng.random_range(0..Fault::ALL.len())];
        let busy = fault::Busy {
            api_restart: self.api.busy(),
            since_api_restart: self.api.since_last(now),
            duplicate_on: self.duplicate.as_ref().map(|d| d.mac),
        };
        if fault::blocked(fault, i, busy).is_some() {
            return Ok(());
        }
        let detail = match fault {
            Fault::ApiRestart => {
                if !all_ready(macs).await {
                    return Ok(());
                }
                let grace = cp
                    .env_var("NODE_GRACE")
                    .and_then(|g| g.parse().ok())
                    .map_or(DEFAULT_NODE_GRACE, Duration::from_secs);
                let outage = grace + Duration::from_secs(self.rng.random_range(4..=8));
                self.api.begin(cp, outage).await;
                format!("kube-apiserver stopped for {} s", outage.as_secs())
            }
            Fault::DuplicateAgent => {
                if !ready(&macs[i]).await {
                    return Ok(());
                }
                let n = self.duplicates.len() + 1;
                self.duplicate = Some(Duplicate::spawn(i, &macs[i], &cp.logs_dir(), n)?);
                format!("a second agent started for {}", macs[i].node)
            }
            _ => {
                self.inject_on_mac(opts, macs, i, fault, now).await?;
                format!("on {}", macs[i].node)
            }
        };
        progress.line(&format!("chaos: {fault:?} {detail}"));
        self.injected.push(fault);
        Ok(())
    }

    fn end_crash_windows(
        &mut self,
        opts: &Opts,
        macs: &mut [SimMac],
        now: Instant,
    ) -> anyhow::Result<()> {
        let (over, open): (Vec<_>, Vec<_>) = self
            .crash_until
            .drain(..)
            .partition(|(_, until)| *until <= now);
        self.crash_until = open;
        for (i, _) in over {
            let mut k = super::mac_knobs(opts);
            k.rules = std::mem::take(&mut macs[i].knobs.rules);
            macs[i].knobs = k;
            macs[i].write_knobs()?;
        }
        Ok(())
    }

    async fn inject_on_mac(
        &mut self,
        opts: &Opts,
        macs: &mut [SimMac],
        i: usize,
        fault: Fault,
        now: Instant,
    ) -> anyhow::Result<()> {
        let m = &mut macs[i];
        match fault {
            Fault::HangClone => m.knobs.rules.push(Rule::hang("clone").times(1)),
            Fault::StallPull => m.knobs.rules.push(Rule::stall("pull", 30).times(1)),
            Fault::VmLimit => m.knobs.rules.push(Rule::vm_limit().times(1)),
            Fault::AuxStorageLocked => m.knobs.rules.push(Rule::aux_storage_locked().times(1)),
            Fault::CrashWindow => {
                // The VM crashes a quarter into the job, before the guest's command ends: no
                // exit code is recorded, the Pod fails (`cut_short`, not a secret failure).
                m.knobs.vms.insert(
                    "*".into(),
                    super::guest_knob(opts).exits_after(opts.job_ms / 4, 1),
                );
                self.crash_until.push((i, now + Duration::from_secs(3)));
            }
            Fault::AgentRestart => {
                if let Ok(t) = m.agent.metrics().await {
                    self.earlier.push(metrics::parse(&t));
                }
                return m.kill_and_restart().await;
            }
            Fault::ApiRestart | Fault::DuplicateAgent => return Ok(()),
        }
        m.write_knobs()
    }

    /// Ends what is in progress when the workload stops: the API server is started if it is
    /// down; a running observation is awaited when `complete`, dropped otherwise; a running
    /// duplicate is killed and recorded.
    pub async fn finish(&mut self, cp: &ControlPlane, complete: bool) {
        self.api.finish(cp, complete).await;
        if let Some(d) = self.duplicate.take() {
            self.duplicates.push(d.finish().await);
        }
    }

    /// Scrapes of agent incarnations that were killed (their counts are part of the run).
    pub fn take_earlier_scrapes(&mut self) -> Vec<Vec<metrics::Sample>> {
        std::mem::take(&mut self.earlier)
    }

    /// The report's chaos section.
    pub fn report(&self) -> ChaosReport {
        let mut faults_injected = BTreeMap::new();
        for f in &self.injected {
            *faults_injected.entry(f.as_str()).or_default() += 1;
        }
        let max = self
            .api
            .records
            .iter()
            .map(ApiRestartRecord::max_ready_after)
            .try_fold(None::<f64>, |m, v| {
                v.map(|v| Some(m.map_or(v, |m| m.max(v))))
            })
            .flatten();
        ChaosReport {
            faults_injected,
            node_status_period_seconds: super::agents::NODE_STATUS_PERIOD.as_secs_f64(),
            node_ready_after_api_return_max_seconds: max,
            api_restarts: self.api.records.clone(),
            duplicate_agents: self.duplicates.clone(),
        }
    }
}

async fn ready(m: &SimMac) -> bool {
    m.agent.get("/readyz").await.is_ok_and(|r| r.status == 200)
}

async fn all_ready(macs: &[SimMac]) -> bool {
    for m in macs {
        if !ready(m).await {
            return false;
        }
    }
    true
}
