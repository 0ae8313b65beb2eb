//! Start-up of a sandbox run: a private control plane under the shipped RBAC, one agent per
//! simulated Mac mini, and the wait for their Nodes to be Ready.

use std::time::Duration;

use kube::Client;
use tempfile::TempDir;

use super::{
    Opts, Scenario,
    agents::{self, Binaries, SimMac},
    approve, chaos, invariants, mac_knobs, progress, save_logs,
};
use crate::cluster::ControlPlane;

/// Agents whose log and metrics addresses the start-up line names.
const SHOWN_AGENTS: usize = 5;

/// What start-up leaves running. Dropping it stops everything (agents are killed on drop,
/// fake-tart homes kill their VMs, the control plane stops).
pub(super) struct Started {
    pub cp: ControlPlane,
    pub admin: Client,
    pub macs: Vec<SimMac>,
    /// `image-roll`: the registry directory every Mac's fake-tart pulls through.
    pub registry: Option<TempDir>,
}

/// Start the control plane and one agent per simulated Mac, and wait for their Nodes.
pub(super) async fn start(
    opts: &Opts,
    bins: &Binaries,
    progress: &mut progress::Progress,
) -> anyhow::Result<Started> {
    let nice = opts.control_plane_nice.to_string();
    let cp = ControlPlane::start_private_with("sandbox", &["--nice", &nice])?;
    progress.line(&format!(
        "control plane ready in {:.1} s at {} (logs {})",
        cp.start_to_ready().as_secs_f64(),
        cp.server_url(),
        cp.logs_dir().display()
    ));
    let admin = cp.admin_client().await;
    // Before the workload: some runners name it (docs/sandbox.md).
    super::profile::apply_runtime_class(&admin).await?;
    apply_rbac(&cp)?;
    // What the agents' pre-pull needs, whatever the scenario: they all watch its ConfigMap.
    let registry = if matches!(opts.scenario, Scenario::ImageRoll | Scenario::Fleet) {
        Some(
            tempfile::Builder::new()
                .prefix("sandbox-registry-")
                .tempdir()?,
        )
    } else {
        None
    };
    let agent_kc = cp.mint_kubeconfig(super::accounting::USER, &["tart-kubelets"]);
    let dirs_root = agents::dirs_root(opts.dirs_on_disk);
    let mut macs = Vec::new();
    for i in 1..=opts.nodes {
        // A Mac mini M2 Pro: 10 cores, 32 GiB (the Linux host's own figures would not fit a
        // macOS VM's requests).
        let mut args: Vec<String> = [
            "--vm-slots",
            &opts.slots.to_string(),
            "--cpu",
            "10",
            "--memory",
            "32Gi",
            // Every simulated Mac's TART_HOME is on the build host's volume: its free space
            // (often under the default 10 % on a CI runner) is not the simulated Mac's, and
            // DiskPressure would taint every Node and leave the workload unscheduled.
            "--disk-pressure-free",
            "100Mi",
        ]
        .map(String::from)
        .to_vec();
        // Tart's 5 s start window, scaled like every other latency (at least 100 ms).
        let window_ms = ((5000.0 * opts.latency_scale) as u64).max(100);
        args.extend(["--run-start-window".to_string(), format!("{window_ms}ms")]);
        args.extend([
            "--node-status-check-interval".to_string(),
            format!("{}s", agents::NODE_STATUS_PERIOD.as_secs()),
        ]);
        if opts.scenario == Scenario::Chaos {
            args.extend(chaos::agent_args());
        }
        if opts.scenario == Scenario::ImageRoll {
            // The pre-pull declaration is read every 30 s by default; scaled like every other
            // latency (at least 1 s), so that the sandbox's roll is not mostly that wait.
            let ms = ((30_000.0 * opts.latency_scale) as u64).max(1000);
            args.extend(["--prepull-period".to_string(), format!("{ms}ms")]);
        }
        if opts.scenario == Scenario::Fleet {
            args.extend([
                "--prepull-period".to_string(),
                format!("{}s", opts.prepull_period_seconds),
            ]);
        }
        // Each Mac serves the kubelet API on its own loopback port with a serving certificate
        // it requests through the CSR API; the sandbox approves the requests below (the
        // operator's act) and the controller-manager signs them with the cluster CA, so
        // `kubectl logs` works as against real kubelets.
        let port = crate::agent::free_port()?.port();
        args.extend([
            "--kubelet-address".to_string(),
            "127.0.0.1".to_string(),
            "--kubelet-port".to_string(),
            port.to_string(),
            "--client-ca-file".to_string(),
            cp.ca_cert_path().display().to_string(),
        ]);
        let node = format!("mac-mini-{i}");
        // A fleet's Macs join the shared registry after their first image is in place
        // (`super::join_registry`): a hundred pulls counting each other's entries every
        // simulated second would take the machine's two cores.
        let knobs = match &registry {
            Some(dir) if opts.scenario != Scenario::Fleet => {
                mac_knobs(opts).with_shared_registry(dir.path(), opts.registry_mb_per_s)
            }
            _ => mac_knobs(opts),
        };
        macs.push(SimMac::start(&node, bins, &agent_kc, knobs, args, &dirs_root).await?);
    }
    // A fleet's hundred paths would bury the progress: the first few stand for the rest.
    let shown = macs.len().min(SHOWN_AGENTS);
    progress.line(&format!(
        "{} agents started (logs: {}; metrics: {}){}",
        macs.len(),
        macs[..shown]
            .iter()
            .map(|m| m.agent.log_path().display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        macs[..shown]
            .iter()
            .map(|m| format!("http://{}/metrics", m.agent.admin_addr()))
            .collect::<Vec<_>>()
            .join(" "),
        if shown < macs.len() {
            format!(" and {} more", macs.len() - shown)
        } else {
            String::new()
        }
    ));
    let nodes: Vec<String> = macs.iter().map(|m| m.node.clone()).collect();
    let approved = approve::approve_until_issued(&admin, &nodes, Duration::from_secs(90)).await;
    if approved.is_ok() {
        progress.line("serving certificate requests approved and issued");
    }
    let ready = match approved {
        Ok(()) => invariants::wait_nodes_ready(&admin, &macs, Duration::from_secs(90)).await,
        Err(e) => Err(e),
    };
    if let Err(e) = ready {
        for m in &macs {
            eprintln!("--- {} log tail ---\n{}", m.node, m.agent.log_tail(30));
        }
        save_logs(&cp, &macs);
        return Err(e);
    }
    Ok(Started {
        cp,
        admin,
        macs,
        registry,
    })
}

fn apply_rbac(cp: &ControlPlane) -> anyhow::Result<()> {
    let manifest = crate::agent::rbac_yaml();
    let out = std::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(cp.kubeconfig_path())
        .args(["apply", "--request-timeout=30s", "-f"])
        .arg(&manifest)
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "kubectl apply {}: {}",
        manifest.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}
