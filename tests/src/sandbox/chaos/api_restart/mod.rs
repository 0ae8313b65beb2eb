//! The API server restart fault: kube-apiserver is stopped for longer than the
//! controller-manager's node-monitor grace (so the node lifecycle controller marks every Node
//! `Unknown` on the API's return), then started again; from the moment its `/readyz` is ok,
//! every Node is observed until its `Ready` condition is the agent's own again (`True`, or
//! `False` for a host fault chaos injected) instead of the controller's `Unknown`. The time
//! from the return to each Node's recovery is what the report checks against the agents'
//! status period.

use std::{
    collections::BTreeMap,
    time::{Duration, Instant},
};

use k8s_openapi::api::core::v1::Node;
use kube::{Api, Client, api::ListParams};
use serde::Serialize;
use tokio::task::JoinHandle;

use crate::{cluster::ControlPlane, sandbox::probe::ready_status};

/// How often the Nodes are read after the API's return.
const OBSERVE_EVERY: Duration = Duration::from_millis(200);
/// Deadline of one Node list while observing.
const LIST_DEADLINE: Duration = Duration::from_secs(2);

/// One API server restart as the report shows it.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct ApiRestartRecord {
    /// From the stop to `/readyz` ok again, seconds.
    pub outage_seconds: f64,
    /// Per node: seconds from the API's return until its `Ready` condition was the agent's
    /// (`True` or `False`) and stayed so for the rest of the observation; `null` when it was
    /// still `Unknown` (or missing) at the end.
    pub node_recovered_after_seconds: BTreeMap<String, Option<f64>>,
    /// Per node: the `Ready` status at the end of the observation (`True`, `False`,
    /// `Unknown`; empty when it was never read).
    pub node_ready_at_end: BTreeMap<String, String>,
}

impl ApiRestartRecord {
    /// The slowest Node's recovery; `None` when some Node did not recover.
    pub fn max_ready_after(&self) -> Option<f64> {
        self.node_recovered_after_seconds
            .values()
            .try_fold(0.0_f64, |m, v| v.map(|v| m.max(v)))
    }
}

/// The time a Node recovered, from observations `(seconds since the return, the Ready
/// condition is the agent's)` in order: the first observation of the agent's status after
/// the last one that was not. `None` when the last was not, or there was none.
pub fn recovered_at(observations: &[(f64, bool)]) -> Option<f64> {
    let last_not_ready = observations.iter().rposition(|(_, ready)| !ready);
    let first_ready_after = last_not_ready.map_or(0, |i| i + 1);
    observations.get(first_ready_after).map(|(t, _)| *t)
}

enum Phase {
    Up,
    Down {
        began: Instant,
        until: Instant,
    },
    Observing {
        outage: Duration,
        task: JoinHandle<Observed>,
    },
}

/// The API restart fault's state: at most one restart at a time.
pub struct ApiRestarts {
    phase: Phase,
    last_end: Option<Instant>,
    /// Restarts done, in order.
    pub records: Vec<ApiRestartRecord>,
}

impl Default for ApiRestarts {
    fn default() -> Self {
        Self {
            phase: Phase::Up,
            last_end: None,
            records: Vec::new(),
        }
    }
}

impl ApiRestarts {
    /// The API server is down, or the Nodes' recovery is being observed.
    pub fn busy(&self) -> bool {
        !matches!(self.phase, Phase::Up)
    }

    /// The API server is down (or being stopped or started).
    pub fn down(&self) -> bool {
        matches!(self.phase, Phase::Down { .. })
    }

    /// Time since the last restart's observation ended.
    pub fn since_last(&self, now: Instant) -> Option<Duration> {
        self.last_end.map(|t| now.saturating_duration_since(t))
    }

    /// Stops kube-apiserver for `outage`. The phase is `Down` before the stop is awaited, so
    /// an interrupted stop is still followed by a start in [`Self::finish`].
    pub async fn begin(&mut self, cp: &ControlPlane, outage: Duration) {
        let began = Instant::now();
        self.phase = Phase::Down {
            began,
            until: began + outage,
        };
        cp.stop_apiserver().await;
    }

    /// Moves the restart on: starts the API server once the outage is over, and collects the
    /// observation once it is complete. Returns a line for the progress log when something
    /// happened.
    pub async fn poll(
        &mut self,
        cp: &ControlPlane,
        admin: &Client,
        nodes: &[String],
        window: Duration,
    ) -> Option<String> {
        match &mut self.phase {
            Phase::Up => None,
            Phase::Down { began, until } => {
                if Instant::now() < *until {
                    return None;
                }
                let began = *began;
                cp.start_apiserver().await;
                let outage = began.elapsed();
                let task = tokio::spawn(observe(admin.clone(), nodes.to_vec(), window));
                self.phase = Phase::Observing { outage, task };
                Some(format!(
                    "chaos: API server back after {:.1} s; observing the Nodes for {} s",
                    outage.as_secs_f64(),
                    window.as_secs()
                ))
            }
            Phase::Observing { task, .. } if !task.is_finished() => None,
            Phase::Observing { .. } => Some(self.collect().await),
        }
    }

    /// Ends a restart in progress: starts the API server if it is down (the rest of the run
    /// needs it; that restart is not recorded, its observation never happened). A running
    /// observation is awaited when `complete` (the workload ended normally) and dropped
    /// otherwise (an interrupted run does not wait for it).
    pub async fn finish(&mut self, cp: &ControlPlane, complete: bool) {
        match std::mem::replace(&mut self.phase, Phase::Up) {
            Phase::Up => {}
            Phase::Down { .. } => cp.start_apiserver().await,
            Phase::Observing { outage, task } if complete => {
                self.phase = Phase::Observing { outage, task };
                self.collect().await;
            }
            Phase::Observing { task, .. } => task.abort(),
        }
    }

    async fn collect(&mut self) -> String {
        let Phase::Observing { outage, task } = std::mem::replace(&mut self.phase, Phase::Up)
        else {
            return String::new();
        };
        let (node_recovered_after_seconds, node_ready_at_end) = task.await.unwrap_or_default();
        self.last_end = Some(Instant::now());
        let rec = ApiRestartRecord {
            outage_seconds: outage.as_secs_f64(),
            node_recovered_after_seconds,
            node_ready_at_end,
        };
        let line = match rec.max_ready_after() {
            Some(s) => format!(
                "chaos: every Node's Ready is the agent's again {s:.1} s after the API's return: {:?}",
                rec.node_ready_at_end
            ),
            None => format!(
                "chaos: a Node was still Unknown at the end of the observation: {:?}",
                rec.node_ready_at_end
            ),
        };
        self.records.push(rec);
        line
    }
}

/// Per node: the recovery time and the `Ready` status at the end.
type Observed = (BTreeMap<String, Option<f64>>, BTreeMap<String, String>);

/// Reads the Nodes every [`OBSERVE_EVERY`] for `window` (at least once) and returns each
/// one's recovery time (see [`recovered_at`]) and last `Ready` status.
async fn observe(admin: Client, nodes: Vec<String>, window: Duration) -> Observed {
    let api: Api<Node> = Api::all(admin);
    let returned = Instant::now();
    let mut seen: BTreeMap<String, Vec<(f64, bool)>> = BTreeMap::new();
    let mut last: BTreeMap<String, String> = BTreeMap::new();
    loop {
        let at = returned.elapsed().as_secs_f64();
        if let Ok(Ok(list)) =
            tokio::time::timeout(LIST_DEADLINE, api.list(&ListParams::default())).await
        {
            for n in &nodes {
                let status = list
                    .items
                    .iter()
                    .find(|x| x.metadata.name.as_deref() == Some(n))
                    .and_then(ready_status)
                    .unwrap_or("Unknown");
                // Only the node lifecycle controller writes `Unknown`; the agent writes True
                // or False.
                let agents = status == "True" || status == "False";
                seen.entry(n.clone()).or_default().push((at, agents));
                last.insert(n.clone(), status.to_owned());
            }
        }
        if returned.elapsed() >= window && !seen.is_empty() {
            break;
        }
        if returned.elapsed() >= window + LIST_DEADLINE * 5 {
            // The API did not answer for the whole window and well past it.
            break;
        }
        tokio::time::sleep(OBSERVE_EVERY).await;
    }
    let recovered = nodes
        .iter()
        .map(|n| {
            let obs = seen.get(n).map(Vec::as_slice).unwrap_or_default();
            (n.clone(), recovered_at(obs))
        })
        .collect();
    let at_end = nodes
        .iter()
        .map(|n| (n.clone(), last.get(n).cloned().unwrap_or_default()))
        .collect();
    (recovered, at_end)
}

#[cfg(test)]
mod tests;
