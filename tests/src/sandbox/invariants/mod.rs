//! End-of-scenario checks: no orphan VM, no stranded finalizer, no process left, every Pod in
//! the terminal state it should have, each Pod counted once in each histogram, every runner's
//! job saw its secret, and chaos's Node recovery after API restarts and refused duplicate
//! agents; plus the readiness wait before a workload and per-agent resource use.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::{
    Api, Client,
    api::{DeleteParams, ListParams},
};

use super::{
    NAMESPACE, Opts, Scenario,
    agents::SimMac,
    chaos::ChaosReport,
    guest::{Check, CheckCounts},
    probe,
    report::{AgentUsage, Invariant, Report},
    workload::{Ending, PoolState},
};
use crate::cluster::{self, ControlPlane};

/// An invariant named `name` that held when `ok`.
pub fn check(name: &str, ok: bool, detail: String) -> Invariant {
    Invariant {
        name: name.into(),
        ok,
        detail: if ok { String::new() } else { detail },
    }
}

/// Waits until every simulated Mac's Node is Ready.
pub async fn wait_nodes_ready(
    admin: &Client,
    macs: &[SimMac],
    within: Duration,
) -> anyhow::Result<()> {
    let api: Api<Node> = Api::all(admin.clone());
    let names: Vec<&str> = macs.iter().map(|m| m.node.as_str()).collect();
    cluster::wait_for(within, || {
        let api = api.clone();
        let names = names.clone();
        async move {
            let nodes = api.list(&ListParams::default()).await.ok()?;
            let ready = names.iter().all(|n| {
                nodes
                    .items
                    .iter()
                    .any(|x| x.metadata.name.as_deref() == Some(n) && probe::node_ready(x))
            });
            ready.then_some(())
        }
    })
    .await
    .map_err(|e| anyhow::anyhow!("nodes not Ready: {e}"))
}

/// Deletes the workload's Pods and waits until they are gone (finalizers removed by the
/// agents) and no VM is left in any home, nor any VM's directory in any guest directory.
pub async fn teardown(admin: &Client, macs: &[SimMac], within: Duration) -> Vec<Invariant> {
    let api: Api<Pod> = Api::namespaced(admin.clone(), NAMESPACE);
    let _ = tokio::time::timeout(
        Duration::from_secs(30),
        api.delete_collection(&DeleteParams::default(), &ListParams::default()),
    )
    .await;
    let deadline = Instant::now() + within;
    let gone = cluster::wait_for(within, || {
        let api = api.clone();
        async move {
            let l = api.list(&ListParams::default()).await.ok()?;
            l.items.is_empty().then_some(())
        }
    })
    .await;
    let stranded = match &gone {
        Ok(()) => String::new(),
        Err(_) => match api.list(&ListParams::default()).await {
            Ok(l) => l
                .items
                .iter()
                .map(|p| {
                    format!(
                        "{} (finalizers {:?})",
                        p.metadata.name.as_deref().unwrap_or("?"),
                        p.metadata.finalizers.clone().unwrap_or_default()
                    )
                })
                .collect::<Vec<_>>()
                .join(", "),
            Err(e) => format!("cannot list pods: {e}"),
        },
    };
    let left = deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_secs(10));
    let vms_gone = cluster::wait_for(left, || async {
        let n: usize = macs
            .iter()
            .map(|m| vm_dirs(m).len() + guest_dirs(m).len())
            .sum();
        (n == 0).then_some(())
    })
    .await;
    let orphans: Vec<String> = macs
        .iter()
        .flat_map(|m| {
            let guest = guest_dirs(m).into_iter().map(|g| format!("guest/{g}"));
            vm_dirs(m)
                .into_iter()
                .chain(guest)
                .map(move |v| format!("{}:{v}", m.node))
        })
        .collect();
    vec![
        check(
            "no_stranded_finalizer",
            gone.is_ok(),
            format!("pods left: {stranded}"),
        ),
        check(
            "no_orphan_vm",
            vms_gone.is_ok(),
            format!("VMs left: {}", orphans.join(", ")),
        ),
    ]
}

/// The Pods' VM directories (golden bases outlive their Pods by design).
fn vm_dirs(m: &SimMac) -> Vec<String> {
    entries(&m.agent.home().path().join("vms"))
        .into_iter()
        .filter(|n| !crate::fake::is_golden(n))
        .collect()
}

/// What is left in the agent's guest directory (a VM's shares, or the agent's temporaries).
fn guest_dirs(m: &SimMac) -> Vec<String> {
    entries(m.guest_dir())
}

fn entries(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Every finished runner's guest ran its job with the token the workload stored: each ended
/// Pod has a check, none rejected its token, succeeded without a recorded exit code or went
/// unchecked (first seen ended once deleted, its exit code gone with its VM), and a job cut
/// short by its VM's end (no exit code, Pod `Failed`) only when chaos crashed VMs on purpose
/// (`crash_windows` injected).
pub fn jobs_saw_their_secret(pool: &PoolState, crash_windows: u64) -> Invariant {
    let c = CheckCounts::of(pool.checks.values());
    let mut bad: Vec<String> = pool
        .checks
        .iter()
        .filter_map(|(name, k)| match k {
            Check::Rejected(code) => Some(format!("{name}: job exited {code}")),
            Check::Unverified => Some(format!("{name}: Succeeded without a guest exit code")),
            Check::CutShort if crash_windows == 0 => Some(format!(
                "{name}: Failed before its job ended, with no crash injected"
            )),
            Check::NotChecked => Some(format!(
                "{name}: not checked: the Pod was being deleted when the sandbox first saw it \
                 ended, and its guest's exit code was gone"
            )),
            Check::Passed | Check::CutShort => None,
        })
        .collect();
    let unchecked: Vec<&String> = pool
        .ended
        .keys()
        .filter(|n| !pool.checks.contains_key(*n))
        .collect();
    if !unchecked.is_empty() {
        bad.push(format!("ended without a check: {unchecked:?}"));
    }
    check(
        "jobs_saw_their_secret",
        bad.is_empty(),
        format!(
            "{} passed, {} rejected, {} cut short, {} unverified, {} not checked: {}",
            c.passed,
            c.secret_rejected,
            c.cut_short,
            c.unverified,
            c.not_checked,
            bad.join("; ")
        ),
    )
}

/// Terminal states and once-per-Pod histograms.
pub fn workload(opts: &Opts, pool: &PoolState, rep: &Report) -> Vec<Invariant> {
    let mut out = Vec::new();
    let succeeded = pool
        .ended
        .values()
        .filter(|e| **e == Ending::Succeeded)
        .count() as u64;
    let failed = pool.ended.len() as u64 - succeeded;
    let all_ended = pool.ended.len() as u64 == pool.created;
    let expected = match opts.scenario {
        // Injected guest crashes end Pods Failed (restartPolicy Never); everything else must
        // succeed.
        Scenario::Chaos => all_ended,
        _ => all_ended && failed == 0,
    };
    let lost = if pool.lost.is_empty() {
        String::new()
    } else {
        format!("; deleted before they were seen ended: {:?}", pool.lost)
    };
    out.push(check(
        "pods_in_expected_terminal_state",
        expected,
        format!(
            "{} created, {} ended ({succeeded} succeeded, {failed} failed){lost}",
            pool.created,
            pool.ended.len()
        ),
    ));
    let boot = rep.stages_seconds.boot.count;
    let prov = rep.stages_seconds.provision_delay.count;
    let once = match opts.scenario {
        // An agent restart adopts running VMs, which are never counted, and a Pod whose VM
        // was started by a killed incarnation was counted by it (its scrape is kept).
        Scenario::Chaos => boot <= pool.created && prov <= pool.created,
        // Without a guest, each VM's timer runs from `tart run`, and the agent asks for the
        // address only once the start window has passed: a VM whose timer ends first never
        // had an address, so its boot is rightly not counted (the histogram is `tart run` to
        // the first IP, docs/metrics.md). Every Pod's start still is.
        _ if opts.no_guest => boot <= pool.created && prov == pool.created,
        _ => boot == pool.created && prov == pool.created,
    };
    out.push(check(
        "each_pod_counted_once_per_histogram",
        once,
        format!(
            "boot count {boot}, provision-delay count {prov}, pods {}",
            pool.created
        ),
    ));
    out
}

/// The chaos scenario's own invariants: every Node's `Ready` condition the agent's again
/// (no longer the controller's `Unknown`) within one status period after each API server
/// restart, and every duplicate agent refused to run.
pub fn chaos(c: &ChaosReport) -> Vec<Invariant> {
    let period = c.node_status_period_seconds;
    let slow: Vec<String> = c
        .api_restarts
        .iter()
        .enumerate()
        .filter(|(_, r)| r.max_ready_after().is_none_or(|s| s > period))
        .map(|(i, r)| format!("restart {}: {:?}", i + 1, r.node_recovered_after_seconds))
        .collect();
    let duplicates: Vec<String> = c
        .duplicate_agents
        .iter()
        .filter_map(|d| d.violation())
        .collect();
    vec![
        check(
            "node_ready_after_api_return",
            slow.is_empty(),
            format!(
                "Nodes still Unknown {period} s after the API's return (seconds per node): {}",
                slow.join("; ")
            ),
        ),
        check(
            "duplicate_agents_refused",
            duplicates.is_empty(),
            duplicates.join("; "),
        ),
    ]
}

/// After `ControlPlane::stop`: none of its processes remain.
pub fn no_control_plane_left(cp: &ControlPlane) -> Invariant {
    let left = cluster::processes_of_run(cp.run_dir());
    check(
        "no_control_plane_process_left",
        left.is_empty(),
        format!("{left:?}"),
    )
}

/// The agent's resource use over the run.
pub fn usage(m: &SimMac) -> AgentUsage {
    let (rss, peak, cpu) = m
        .agent
        .pid()
        .and_then(probe::process_usage)
        .unwrap_or((0, 0, 0.0));
    let wall = m.started.elapsed().as_secs_f64().max(1e-3);
    AgentUsage {
        node: m.node.clone(),
        rss_bytes: rss,
        peak_rss_bytes: peak,
        cpu_percent: (cpu + m.cpu_before) / wall * 100.0,
        restarts: m.restarts,
    }
}

#[cfg(test)]
mod tests;
