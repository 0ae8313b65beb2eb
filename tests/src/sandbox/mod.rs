//! The sandbox (issue 6): one command that starts a real control plane, N simulated Mac minis
//! (fake-tart homes + tart-kubelet processes under the least-privilege RBAC), runs a workload
//! scenario, checks invariants, prints a report and writes it as JSON. Everything it started is
//! stopped at the end, on Ctrl-C too. See docs/sandbox.md.

pub mod accounting;
pub mod agents;
pub mod approve;
pub mod census;
pub mod chaos;
pub mod fleet;
pub mod guest;
pub mod interrupt;
pub mod invariants;
pub mod metrics;
pub mod probe;
pub mod profile;
pub mod progress;
pub mod report;
pub mod roll;
mod start;
mod teardown;
pub mod workload;

use std::{
    path::PathBuf,
    time::{Duration, Instant},
};

use clap::{ArgMatches, CommandFactory, FromArgMatches, Parser, ValueEnum, parser::ValueSource};
use k8s_openapi::api::core::v1::Namespace;
use kube::{Api, Client, api::PostParams};

use crate::{
    cluster::{self, ControlPlane},
    fake::{GuestImage, Knobs, VmKnob},
};
use agents::{Binaries, SimMac};
use report::Report;

/// Which workload to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Scenario {
    /// A pool of ephemeral CI-runner Pods that boot, run a job and shut down.
    Steady,
    /// Like steady with one free slot per Mac, while the runner image rolls twice on a
    /// registry of shared bandwidth: pulled on demand, then pre-pulled with pacing.
    ImageRoll,
    /// Like steady, with random faults: hangs, crashes, VM-limit hits, agent SIGKILL+restart,
    /// API server restarts, duplicate agents.
    Chaos,
    /// No Pods: measure idle RSS, CPU and API requests per node per minute.
    Idle,
    /// Every API request accounted for: an idle window, then one plain Pod and one runner
    /// Pod with a Secret and a projected token, each alone; requests by verb and resource.
    Api,
    /// Many Macs behind one control plane: runner Pods arriving at a steady rate and an image
    /// roll with pre-pull across the fleet; reports the API load, watch delay, scheduling
    /// latencies, pull-token fairness and the spread of the agents' resource use.
    Fleet,
}

impl Scenario {
    fn as_str(self) -> &'static str {
        match self {
            Scenario::Steady => "steady",
            Scenario::ImageRoll => "image-roll",
            Scenario::Chaos => "chaos",
            Scenario::Idle => "idle",
            Scenario::Api => "api",
            Scenario::Fleet => "fleet",
        }
    }
}

/// `scripts/sandbox` options.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "sandbox",
    about = "Run tart-kubelet end to end without a Mac: a real control plane, simulated Mac minis (fake-tart), a workload, a report"
)]
pub struct Opts {
    /// Workload scenario.
    #[arg(long, value_enum, default_value = "steady")]
    pub scenario: Scenario,
    /// Simulated Mac minis (one agent each).
    #[arg(long, default_value_t = 3)]
    pub nodes: u32,
    /// Pod lifecycles to complete (`fleet`: 20 per node unless given).
    #[arg(long, default_value_t = 30)]
    pub pods: u64,
    /// `fleet`: runner Pods created per second (while the fleet has a free VM slot).
    #[arg(long, default_value_t = 4.0)]
    pub arrival_per_second: f64,
    /// `fleet`: the agents' `--prepull-period` in seconds (their default, 60, keeps the API
    /// figures a production fleet's; a shorter one makes a small run's roll quicker).
    #[arg(long, default_value_t = 60)]
    pub prepull_period_seconds: u64,
    /// VM slots per Mac (Apple's limit is 2).
    #[arg(long, default_value_t = 2)]
    pub slots: u32,
    /// Scale of fake-tart's realistic latencies (25 GB pull ~250 s, clone ~1 s, boot ~10 s,
    /// CI job of `--job-ms` at 1.0). 0.001 for the agent-overhead benchmark (at 0 the CI job
    /// ends before the guest has an address, so no boot is counted). `fleet`: 0.01 unless given.
    #[arg(long, default_value_t = 0.05)]
    pub latency_scale: f64,
    /// Length of one CI job inside the VM before the guest shuts down, before scaling
    /// (`fleet`: 1200000, a 20-minute job, unless given).
    #[arg(long, default_value_t = 120_000)]
    pub job_ms: u64,
    /// Idle and api scenarios: how long to measure the idle Node.
    #[arg(long, default_value_t = 120)]
    pub idle_seconds: u64,
    /// Write the report as JSON here.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Leave everything up at the end (prints the KUBECONFIG line); Ctrl-C stops it.
    #[arg(long)]
    pub keep: bool,
    /// Give up on the workload after this long (`fleet`: twice the arrivals' span plus
    /// 10 minutes, unless given).
    #[arg(long, default_value_t = 900)]
    pub timeout_seconds: u64,
    /// The registry bandwidth every simulated Mac shares in `image-roll` and `fleet`, MB/s
    /// before scaling (each Mac alone pulls at 100; `fleet`: 1000 unless given).
    #[arg(long, default_value_t = 200.0)]
    pub registry_mb_per_s: f64,
    /// The pre-pull's `maxConcurrentPulls` (`image-roll`, `fleet`: 10 unless given).
    #[arg(long, default_value_t = 2)]
    pub max_concurrent_pulls: u32,
    /// The pre-pull's `maxConcurrentPercent` (`image-roll`, `fleet`: 10 unless given).
    #[arg(long, default_value_t = 50)]
    pub max_concurrent_percent: u32,
    /// Random seed for chaos.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Simulated Macs without the guest launcher: a guest shuts down after `--job-ms`
    /// without running the Pod's command, and no job checks its secret.
    #[arg(long)]
    pub no_guest: bool,
    /// Simulated images with the guest launcher baked in, instead of guest-agent-only images
    /// where the agent delivers it.
    #[arg(long, conflicts_with = "no_guest")]
    pub baked_launcher: bool,
    /// Niceness of the control plane's processes (`steady`: 10 unless given, other scenarios
    /// 0). In production the API server and etcd run on other machines than the agents; here
    /// they share two cores with them, and at the same priority they would add their own
    /// time slices to the agent overhead `steady` measures (docs/sandbox.md).
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    pub control_plane_nice: i32,
    /// Keep the agents' guest and Pod-log directories on disk under `TMPDIR`, instead of on
    /// the tmpfs `/dev/shm` (used when it exists): a Mac's APFS creates a file in
    /// microseconds, where some Linux file systems make each new file slower the more files
    /// were freed in the last half minute (docs/sandbox.md).
    #[arg(long)]
    pub dirs_on_disk: bool,
    /// Store a different token in the Secret than the jobs expect (every job must then fail
    /// its check; tests `jobs_saw_their_secret`).
    #[arg(long, hide = true)]
    pub wrong_token: bool,
}

impl Opts {
    /// Parses `args` (the program's name first) and applies the scenario's defaults to the
    /// options not given.
    ///
    /// # Errors
    /// Clap's, for bad arguments or `--help`.
    pub fn parse_args<I, T>(args: I) -> Result<Opts, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let matches = Opts::command().try_get_matches_from(args)?;
        let mut opts = Opts::from_arg_matches(&matches)?;
        opts.scenario_defaults(&matches);
        Ok(opts)
    }

    /// `steady`'s and `fleet`'s own defaults, for the options the command line left out.
    fn scenario_defaults(&mut self, m: &ArgMatches) {
        let unset = |id: &str| m.value_source(id) != Some(ValueSource::CommandLine);
        if self.scenario == Scenario::Steady && unset("control_plane_nice") {
            self.control_plane_nice = 10;
        }
        if self.scenario != Scenario::Fleet {
            return;
        }
        if unset("pods") {
            self.pods = 20 * u64::from(self.nodes);
        }
        if unset("latency_scale") {
            self.latency_scale = 0.01;
        }
        if unset("job_ms") {
            self.job_ms = 1_200_000;
        }
        if unset("registry_mb_per_s") {
            self.registry_mb_per_s = 1000.0;
        }
        if unset("max_concurrent_pulls") {
            self.max_concurrent_pulls = 10;
        }
        if unset("max_concurrent_percent") {
            self.max_concurrent_percent = 10;
        }
        if unset("timeout_seconds") {
            let span = self.pods as f64 / self.arrival_per_second.max(0.01);
            self.timeout_seconds = (2.0 * span) as u64 + 600;
        }
    }
}

/// Entry point of the `sandbox` binary.
pub fn main() -> std::process::ExitCode {
    let opts = match Opts::parse_args(std::env::args_os()) {
        Ok(o) => o,
        Err(e) => e.exit(),
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("sandbox: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match rt.block_on(run(opts)) {
        Ok(true) => std::process::ExitCode::SUCCESS,
        Ok(false) => std::process::ExitCode::FAILURE,
        Err(e) => {
            eprintln!("sandbox: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// The namespace the workload runs in.
pub const NAMESPACE: &str = "sandbox";

/// Knobs for a realistic simulated Mac: fake-tart's realistic defaults, scaled, and a guest
/// that runs one CI job then shuts itself down: the Pod's command through the guest
/// launcher, or (`--no-guest`) a timer of `--job-ms`.
pub fn mac_knobs(opts: &Opts) -> Knobs {
    let vm = if opts.no_guest {
        guest_knob(opts).exits_after(opts.job_ms, 0)
    } else {
        guest_knob(opts)
    };
    Knobs::new()
        .with_latency_scale(opts.latency_scale)
        .with_vm("*", vm)
}

/// Every VM's knob before any timer: unless `--no-guest`, a guest-agent-only image (Cirrus
/// Labs' base images: the agent delivers the guest launcher through `tart exec`, the path a
/// new user takes), or with `--baked-launcher` an image with the launcher baked in.
pub fn guest_knob(opts: &Opts) -> VmKnob {
    if opts.no_guest {
        VmKnob::default()
    } else if opts.baked_launcher {
        VmKnob::default().guest_image(GuestImage::Baked)
    } else {
        VmKnob::default().guest_image(GuestImage::AgentOnly)
    }
}

/// The runner job when the guest runs Pods' commands: the scaled `--job-ms`, checking the
/// token's checksum.
pub fn runner_job(opts: &Opts, token: &guest::RunnerToken) -> Option<guest::Job> {
    (!opts.no_guest).then(|| guest::Job {
        seconds: opts.job_ms as f64 * opts.latency_scale / 1000.0,
        checksum: token.checksum(),
    })
}

async fn run(opts: Opts) -> anyhow::Result<bool> {
    let t0 = Instant::now();
    anyhow::ensure!(
        opts.scenario != Scenario::Fleet || opts.pods >= 6,
        "fleet needs --pods 6 or more"
    );
    let mut progress = progress::Progress::new();
    progress.line("building/checking the control plane (cached after the first run)");
    // Before the handlers are installed: Ctrl-C during a build ends it at once, as usual.
    cluster::build()?;
    let bins = Binaries::beside_me()?;
    let interrupts = interrupt::Interrupts::listen()?;
    let started = tokio::select! {
        r = start::start(&opts, &bins, &mut progress) => Some(r?),
        () = interrupts.reached(1) => None,
    };
    let Some(start::Started {
        cp,
        admin,
        mut macs,
        registry,
    }) = started
    else {
        // The start-up future was dropped: what it had started went with it.
        println!("interrupted during start-up; everything started was stopped");
        return Ok(false);
    };
    ensure_namespace(&admin).await?;
    let host = report::Host {
        control_plane_nice: cp.nice_of("kube-apiserver"),
        agent_dirs: macs
            .first()
            .map_or("unknown", |m| agents::file_system_kind(m.guest_dir()))
            .to_string(),
    };
    let token = guest::RunnerToken::random();
    let job = runner_job(&opts, &token);
    if job.is_some() && !matches!(opts.scenario, Scenario::Idle | Scenario::Api) {
        let stored = if opts.wrong_token {
            guest::RunnerToken::random()
        } else {
            token.clone()
        };
        stored.store(&admin, NAMESPACE).await?;
    }
    let runners = workload::Runners {
        job,
        guest_dirs: guest::GuestDirs(macs.iter().map(|m| m.guest_dir().to_path_buf()).collect()),
    };
    if let Some(dir) = &registry {
        progress.line("every Mac pulls the runner image (not measured)");
        roll::preseed(&opts, &macs, &bins.fake_tart).await?;
        if opts.scenario == Scenario::Fleet {
            join_registry(&opts, &mut macs, dir.path())?;
        }
    }
    let mut roll = match (&registry, opts.scenario) {
        (Some(dir), Scenario::ImageRoll) => {
            anyhow::ensure!(opts.pods >= 6, "image-roll needs --pods 6 or more");
            Some(roll::Roll::new(&opts, &macs, dir.path()))
        }
        _ => None,
    };
    let audit_start = probe::now_rfc3339();
    let mut fleet = match (&registry, opts.scenario) {
        (Some(dir), Scenario::Fleet) => Some(fleet::Fleet::new(
            &opts,
            &cp,
            &admin,
            &macs,
            dir.path(),
            &runners,
        )),
        _ => None,
    };
    let workload_start = Instant::now();

    let mut chaos = chaos::Chaos::new(opts.seed, Instant::now());
    let mut census = census::Census::new(
        macs.iter()
            .map(|m| (m.node.clone(), m.agent.home().path().to_path_buf()))
            .collect(),
    );
    let accounting_run = accounting::Run {
        admin: &admin,
        audit_log: cp.run_dir().join("logs/audit.log"),
        idle: Duration::from_secs(opts.idle_seconds),
        job: runners.job.clone(),
        token: token.clone(),
        deadline: Duration::from_secs(opts.timeout_seconds),
        ca_crt: std::fs::read_to_string(cp.run_dir().join("pki/ca.crt")).unwrap_or_default(),
    };
    let mut api_accounting = None;
    let outcome = tokio::select! {
        r = async {
            if opts.scenario == Scenario::Api {
                let mut pool = workload::PoolState::default();
                api_accounting = Some(accounting::run(&accounting_run, &mut pool, &mut progress).await?);
                anyhow::Ok(pool)
            } else {
                drive(&opts, &cp, &admin, &runners, &mut macs, &mut chaos, &mut census, roll.as_mut(), fleet.as_mut(), &mut progress).await
            }
        } => Some(r),
        () = interrupts.reached(1) => None,
    };
    let fleet_ended = fleet.as_ref().map(|f| f.end(&macs));
    // The API server must be up for the teardown, whatever ended the workload.
    chaos.finish(&cp, matches!(outcome, Some(Ok(_)))).await;
    let interrupted = outcome.is_none();
    let mut failed = false;
    let pool = match outcome {
        Some(Ok(v)) => v,
        Some(Err(e)) => {
            progress.line(&format!("workload failed: {e:#}"));
            failed = true;
            Default::default()
        }
        None => {
            progress.line("interrupted: cleaning up");
            Default::default()
        }
    };
    let mut scrapes = chaos.take_earlier_scrapes();
    let mut rep = Report {
        schema: 1,
        scenario: opts.scenario.as_str().into(),
        nodes: opts.nodes,
        latency_scale: opts.latency_scale,
        host,
        ..Report::default()
    };
    let succeeded = pool
        .ended
        .values()
        .filter(|e| **e == workload::Ending::Succeeded)
        .count() as u64;
    rep.pods = report::PodCounts {
        created: pool.created,
        succeeded,
        failed: pool.ended.len() as u64 - succeeded,
        deleted: pool.ended.len() as u64,
    };
    rep.duration_seconds = workload_start.elapsed().as_secs_f64();
    rep.api_accounting = api_accounting;
    let minutes = workload_start.elapsed().as_secs_f64() / 60.0;
    rep.api_requests_per_node_per_minute = probe::api_rate_for_user(
        &cp.run_dir().join("logs/audit.log"),
        &audit_start,
        accounting::USER,
        minutes,
        opts.nodes,
    );
    if !interrupted {
        // Final scrapes, plus those of incarnations chaos killed.
        let mut last = Vec::new();
        for m in &macs {
            if let Ok(t) = m.agent.metrics().await {
                last.push((m.node.clone(), metrics::parse(&t)));
            }
        }
        scrapes.extend(last.iter().map(|(_, s)| s.clone()));
        rep.add_scrapes(&scrapes);
        if let Some(r) = roll {
            rep.image_roll = Some(r.finish(&admin, NAMESPACE, &pool, &scrapes).await);
        }
        for m in &macs {
            rep.agents.push(invariants::usage(m));
        }
        if let (Some(f), Some(ended)) = (fleet.take(), &fleet_ended) {
            let log = fleet::audit_text(&cp);
            let f = f.report(&opts, ended, &log, &audit_start, &rep.agents, &last);
            rep.invariants.extend(fleet::checks::invariants(&f));
            rep.fleet = Some(f);
        }
        rep.invariants
            .extend(invariants::workload(&opts, &pool, &rep));
        if runners.job.is_some() && !matches!(opts.scenario, Scenario::Idle | Scenario::Api) {
            let crashes = chaos
                .report()
                .faults_injected
                .get(chaos::Fault::CrashWindow.as_str())
                .copied()
                .unwrap_or(0);
            rep.guest_checks = Some(guest::CheckCounts::of(pool.checks.values()));
            rep.invariants
                .push(invariants::jobs_saw_their_secret(&pool, crashes));
        }
        if !matches!(opts.scenario, Scenario::Idle | Scenario::Api) {
            rep.invariants.push(census.invariant());
        }
        if opts.scenario == Scenario::Chaos {
            let c = chaos.report();
            rep.invariants.extend(invariants::chaos(&c));
            rep.chaos = Some(c);
        }
    }
    rep.invariants.push(invariants::check(
        "workload_completed",
        !failed,
        "the workload did not finish (see above)".into(),
    ));
    if opts.keep && !interrupted {
        // Counted before the prompt: a Ctrl-C that arrives as soon as the prompt is read
        // must end the hold, not be taken for one that came before it.
        let release = interrupts.count() + 1;
        println!("{}", rep.render_interim(&CHECKED_AT_TEARDOWN));
        println!(
            "everything is up; in another shell:\n  export KUBECONFIG={}\n  kubectl get nodes,pods -A\nCtrl-C stops it all.",
            cp.kubeconfig_path().display()
        );
        interrupts.reached(release).await;
    }
    rep.invariants
        .extend(teardown::run(&opts, &admin, &mut macs, &interrupts, interrupted).await);
    save_logs(&cp, &macs);
    cp.stop()?;
    rep.invariants.push(invariants::no_control_plane_left(&cp));
    rep.finish();
    println!("{}", rep.render());
    if let Some(path) = &opts.report {
        std::fs::write(path, serde_json::to_string_pretty(&rep)?)?;
        println!("report written to {}", path.display());
    }
    println!("total time {:.1} s", t0.elapsed().as_secs_f64());
    Ok(rep.ok && !interrupted)
}

/// The invariants only the teardown can check (the `--keep` report shows them as pending).
const CHECKED_AT_TEARDOWN: [&str; 5] = [
    "no_stranded_finalizer",
    "no_orphan_vm",
    "agents_stopped_cleanly",
    "no_process_left",
    "no_control_plane_process_left",
];

/// Runs the scenario until done; returns the pool state.
#[allow(clippy::too_many_arguments)]
async fn drive(
    opts: &Opts,
    cp: &ControlPlane,
    admin: &Client,
    runners: &workload::Runners,
    macs: &mut [SimMac],
    chaos: &mut chaos::Chaos,
    census: &mut census::Census,
    mut roll: Option<&mut roll::Roll>,
    mut fleet: Option<&mut fleet::Fleet>,
    progress: &mut progress::Progress,
) -> anyhow::Result<workload::PoolState> {
    let mut state = workload::PoolState::default();
    if opts.scenario == Scenario::Idle {
        let end = Instant::now() + Duration::from_secs(opts.idle_seconds);
        while Instant::now() < end {
            progress.status(&format!(
                "idle: measuring, {} s left",
                end.saturating_duration_since(Instant::now()).as_secs()
            ));
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        return Ok(state);
    }
    let pool = match roll {
        Some(_) => roll::pool(opts),
        None => (opts.nodes * opts.slots) as usize,
    };
    let deadline = Instant::now() + Duration::from_secs(opts.timeout_seconds);
    let tick = Duration::from_millis(500);
    loop {
        census.sample();
        // While the API server is down there is nothing to observe or create.
        if !chaos.api_down() {
            let (image, total) = match (&roll, &fleet) {
                (Some(r), _) => (r.pod_image(), r.creation_cap().min(opts.pods)),
                (None, Some(f)) => (f.pod_image(), f.due()),
                (None, None) => (workload::IMAGE, opts.pods),
            };
            let round = workload::Round {
                ns: NAMESPACE,
                pool,
                total,
                image,
                runners,
                api_deadline: Duration::from_secs(10),
            };
            let step = workload::step(admin, &round, &mut state).await;
            match step {
                Ok(_) => {}
                // Right after an API restart a request may still fail; the next tick retries.
                Err(e) if chaos.api_restarting() => {
                    progress.line(&format!(
                        "workload step failed after the API restart: {e:#}"
                    ));
                }
                Err(e) => return Err(e),
            }
        }
        if let Some(f) = fleet.as_deref() {
            f.count(&mut state);
        }
        if opts.scenario == Scenario::Chaos {
            chaos.tick(opts, cp, admin, macs, progress).await?;
        }
        if let Some(r) = roll.as_deref_mut() {
            r.tick(admin, macs, &state, progress).await?;
        }
        if let Some(f) = fleet.as_deref_mut() {
            f.tick(admin, &state, progress).await?;
        }
        progress.status(&format!(
            "{}: created {}/{}  active {}  ran {}  ended {}{}",
            opts.scenario.as_str(),
            state.created,
            opts.pods,
            state.active(),
            state.ran.len(),
            state.ended.len(),
            if chaos.api_down() { "  (API down)" } else { "" }
        ));
        if state.done(opts.pods) && fleet.as_deref().is_none_or(fleet::Fleet::settled) {
            break;
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "workload did not finish within {} s: {:?}",
            opts.timeout_seconds,
            state.present
        );
        // The pool is polled: the next observation is the thing waited for.
        tokio::time::sleep(tick).await;
    }
    progress.line(&format!(
        "{}: {} pods done",
        opts.scenario.as_str(),
        state.ended.len()
    ));
    Ok(state)
}

/// Points every Mac's fake-tart at the shared registry `dir` from now on.
fn join_registry(opts: &Opts, macs: &mut [SimMac], dir: &std::path::Path) -> anyhow::Result<()> {
    for m in macs {
        m.knobs = mac_knobs(opts).with_shared_registry(dir, opts.registry_mb_per_s);
        m.write_knobs()?;
    }
    Ok(())
}

/// Copies the agents' logs next to the control plane's (their temp dirs go with the agents).
fn save_logs(cp: &ControlPlane, macs: &[SimMac]) {
    for m in macs {
        let _ = std::fs::copy(
            m.agent.log_path(),
            cp.logs_dir().join(format!("agent-{}.log", m.node)),
        );
    }
}

async fn ensure_namespace(admin: &Client) -> anyhow::Result<()> {
    let api: Api<Namespace> = Api::all(admin.clone());
    let ns: Namespace = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Namespace", "metadata": { "name": NAMESPACE }
    }))?;
    match api.create(&PostParams::default(), &ns).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests;
