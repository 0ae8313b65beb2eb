//! Process entry: [`cli_main`] parses the command line, sets up logging and the tokio runtime
//! and dispatches. Running the agent goes registry first: claim the Node's Lease, create the
//! one metrics registry and register every component's metrics into it, build the tart driver
//! with the Pod metrics as its observer, then [`run`] builds the components and starts their
//! tasks — node registration and status, the Lease, the Node watch, the admin HTTP server and
//! the Pod side — and stops them on shutdown.
//!
//! Shutdown (SIGTERM/SIGINT) ends the tasks within a few seconds. VMs are left running (their
//! `tart run` processes live in their own sessions and outlive the agent) and the Node is not
//! deleted: on restart the agent re-registers the same Node and re-adopts the VMs.

use std::{net::IpAddr, process::ExitCode, sync::Arc, time::Duration};

use clap::Parser;
use prometheus_client::registry::Registry;
use tart::Tart;
use tokio::{sync::watch, task::JoinHandle};
use tracing::{Instrument, error, info, info_span, warn};

use crate::{
    admin::{self, Readiness},
    cli::{Cli, Command},
    config::{Config, HostDefaults},
    errors::error_chain,
    host::HostInfo,
    kube_client::{ApiTls, Origin},
    metrics::NodeMetrics,
    node::{
        self, ApiAccess, health::HostHealth, lease::LeaseTask, status_loop::StatusLoop,
        watch::ObservedNode,
    },
    pods::{self, PodSide, metrics::PodMetrics},
    ship::DoctorArgs,
    slots::VmSlots,
};

/// Exit code for configuration errors (the same as clap's usage errors).
const EXIT_CONFIG: u8 = 2;
/// How long tasks get to finish after the shutdown signal.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Why the agent stopped with an error.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RunError {
    /// No usable kubeconfig.
    #[error("cannot load the Kubernetes client configuration")]
    KubeConfig(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The kube client could not be built.
    #[error("cannot build the Kubernetes client")]
    Client(#[source] crate::kube_client::Error),
    /// The admin address could not be bound.
    #[error("cannot listen on {addr}")]
    Bind {
        addr: std::net::SocketAddr,
        #[source]
        source: std::io::Error,
    },
    /// The kubelet API could not start (unusable certificate files, port taken).
    #[error("cannot start the kubelet API")]
    KubeletApi(#[source] crate::kubelet_api::StartError),
}

/// Shared by the `tart-kubelet` binary and `agent-under-test`: parse, set up, dispatch.
pub fn cli_main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(e.exit_code() as u8);
        }
    };
    let host = HostDefaults::detect();
    let (run_args, sub) = match cli.command {
        None => (cli.run, None),
        Some(Command::Run(a)) => (a.or(cli.run), None),
        Some(other) => (cli.run, Some(other)),
    };
    let cfg = match Config::load(run_args, &host) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("tart-kubelet: {}", error_chain(&e));
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    if let Err(e) = crate::telemetry::init(cfg.log_format, &cfg.log_filter, cfg.log_file.as_deref())
    {
        eprintln!("tart-kubelet: {}", error_chain(&e));
        return ExitCode::from(EXIT_CONFIG);
    }
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("tart-kubelet: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    rt.block_on(async move {
        match sub {
            None => run_until_signal(cfg).await,
            Some(cmd) => dispatch_ship(cmd, &cfg).await,
        }
    })
}

async fn dispatch_ship(cmd: Command, cfg: &Config) -> ExitCode {
    let res = match cmd {
        Command::Install(a) => crate::ship::install(&a, cfg).await,
        Command::Uninstall(a) => crate::ship::uninstall(&a, cfg).await,
        Command::Doctor(a) => match a.smoke.clone() {
            Some(image) => smoke(&a, &image, cfg).await,
            None => crate::ship::doctor(&a, cfg).await,
        },
        Command::Run(_) => unreachable!("run is handled by cli_main"),
    };
    res.unwrap_or_else(|e| {
        eprintln!("tart-kubelet: {e:#}");
        ExitCode::FAILURE
    })
}

/// `doctor --smoke IMAGE`: the self-test, with the tart driver the agent would build from the
/// same configuration; Ctrl-C or SIGTERM skips to its clean-up.
async fn smoke(a: &DoctorArgs, image: &str, cfg: &Config) -> anyhow::Result<ExitCode> {
    let cfg = crate::ship::effective_config(&a.run, cfg)?;
    let tart = Arc::new(tart_cli(&cfg, Arc::new(Unobserved)));
    crate::ship::smoke(a, image, &cfg, tart, wait_for_signal()).await
}

/// The self-test counts no tart attempts: it has no metrics.
struct Unobserved;

impl tart::Observer for Unobserved {
    fn attempt(&self, _attempt: &tart::Attempt) {}
}

async fn run_until_signal(cfg: Config) -> ExitCode {
    let (tx, rx) = watch::channel(false);
    tokio::spawn(async move {
        wait_for_signal().await;
        info!("shutdown signal received");
        let _ = tx.send(true);
    });
    info!(node = %cfg.node_name, version = env!("CARGO_PKG_VERSION"), "starting tart-kubelet");
    // The TLS bootstrap (--bootstrap-kubeconfig) makes the credentials everything else uses.
    match crate::credentials::ensure_client_certificate(&cfg, &mut rx.clone()).await {
        Ok(()) => {}
        Err(crate::credentials::BootstrapError::Cancelled) => return ExitCode::SUCCESS,
        Err(e) => {
            error!(error = %error_chain(&e), "agent failed");
            eprintln!("tart-kubelet: {}", error_chain(&e));
            return ExitCode::FAILURE;
        }
    }
    // One agent per Node: claim the Lease before anything touches tart, VMs or Pods.
    let host: Arc<dyn HostInfo> = default_host();
    // Which Mac, boot and process this is, for the Lease's holder identity (the host is asked
    // through commands with deadlines: off the runtime's threads).
    let me = tokio::task::spawn_blocking({
        let host = host.clone();
        move || {
            node::holder::Instance::new(
                host.machine_id().as_deref(),
                host.boot_id().as_deref(),
                std::process::id(),
            )
        }
    })
    .await
    .ok()
    .flatten();
    let claimed = match node::claim::claim_with(kube_config(&cfg).await, &cfg, me, rx.clone()).await
    {
        Ok(c) => c,
        Err(node::claim::ClaimError::Cancelled) => return ExitCode::SUCCESS,
        Err(e) => {
            error!(error = %error_chain(&e), "agent failed");
            eprintln!("tart-kubelet: {}", error_chain(&e));
            return ExitCode::FAILURE;
        }
    };
    // Registry first: every component's metrics exist before any component is built.
    let mut registry = Registry::default();
    let node_metrics = NodeMetrics::register(&mut registry);
    let pod_metrics = PodMetrics::register(&mut registry);
    let tart = Arc::new(tart_cli(&cfg, Arc::new(pod_metrics.clone())));
    // Before anything else runs tart: an earlier incarnation that was killed may have left a
    // hung pull or clone holding Tart's locks (tart::inflight).
    let orphans = tart.reap_orphans().await;
    if !orphans.is_empty() {
        warn!(pids = ?orphans, "killed tart commands a previous agent left running");
    }
    let parts = Parts {
        claimed,
        tart,
        host,
        registry,
        node_metrics,
        pod_metrics,
    };
    match run(cfg, parts, rx).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            error!(error = %error_chain(&e), "agent failed");
            ExitCode::FAILURE
        }
    }
}

async fn wait_for_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(mut term), Ok(mut int)) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        }
        _ => {
            warn!("cannot install signal handlers; falling back to ctrl-c");
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// The host facts source for this platform.
fn default_host() -> Arc<dyn HostInfo> {
    if cfg!(target_os = "macos") {
        Arc::new(crate::macos::MacHost::new())
    } else {
        Arc::new(crate::host::LinuxHost)
    }
}

/// The tart driver configured from `cfg`; `observer` receives every attempt (Pod metrics).
pub(crate) fn tart_cli(cfg: &Config, observer: Arc<dyn tart::Observer>) -> tart::TartCli {
    use tart::Op;
    let mut d = tart::Deadlines {
        pull_stall: cfg.pull_stall_window,
        ..tart::Deadlines::default()
    };
    for (op, v) in &cfg.tart_deadlines {
        let slot = match op {
            Op::Version => &mut d.version,
            Op::List => &mut d.list,
            Op::Get => &mut d.get,
            Op::Set => &mut d.set,
            Op::Delete => &mut d.delete,
            Op::Clone => &mut d.clone,
            Op::Pull => &mut d.pull,
            Op::Prune => &mut d.prune,
            Op::Ip => &mut d.ip_extra,
            Op::Stop => &mut d.stop_extra,
            // `run` and `exec` are bounded by the start window and the caller's deadline.
            Op::Run | Op::Exec => continue,
        };
        *slot = *v;
    }
    tart::TartCli::builder(&cfg.tart_home)
        .program(&cfg.tart_program)
        .deadlines(d)
        .retry(tart::RetryPolicy {
            max_attempts: cfg.tart_attempts,
            ..tart::RetryPolicy::default()
        })
        .observer(observer)
        .track_inflight(true)
        // The agent's disk budget decides what leaves the cache; Tart's own auto-prune would
        // evict the image a golden was just made from, or one a Pod is about to use.
        .no_auto_prune(true)
        .build()
}

/// What [`run`] starts from: the Lease it holds, the tart driver, the host facts, and the one
/// registry with every component's metrics already registered (the tart driver was built with
/// the Pod metrics as its observer).
pub(crate) struct Parts<T: Tart> {
    /// The claimed Lease ([`node::claim::claim`]).
    pub claimed: node::claim::Claimed,
    pub tart: Arc<T>,
    /// Host facts.
    pub host: Arc<dyn HostInfo>,
    /// The registry the admin endpoint serves.
    pub registry: Registry,
    /// The node side's metrics.
    pub node_metrics: NodeMetrics,
    /// The Pod side's metrics.
    pub pod_metrics: PodMetrics,
}

/// Run the agent until `shutdown` turns true.
///
/// # Errors
/// [`RunError`] when the agent cannot start at all (no kubeconfig, admin port taken). Once
/// running, API and tart failures are retried, never fatal.
pub(crate) async fn run<T: Tart>(
    cfg: Config,
    parts: Parts<T>,
    shutdown: watch::Receiver<bool>,
) -> Result<(), RunError> {
    let Parts {
        claimed,
        tart,
        host,
        registry,
        node_metrics: metrics,
        pod_metrics,
    } = parts;
    let cfg = Arc::new(cfg);
    let (kube_config, origin) = kube_config(&cfg).await?;
    let api_tls = ApiTls::new(&kube_config, origin).map_err(RunError::Client)?;
    let client = api_tls.client(&kube_config).map_err(RunError::Client)?;
    // `--node-ip`, else the address this Mac uses towards the API server.
    let internal_ip = match cfg.node_ip {
        Some(ip) => ip,
        None => internal_ip(&kube_config).await,
    }
    .to_string();

    metrics.vm_slots.set(i64::from(cfg.vm_slots));
    let slots = VmSlots::new(cfg.vm_slots, metrics.vm_slots_used.clone());
    let health = HostHealth::with_policy(node::quarantine::Policy {
        faults: cfg.quarantine_faults as usize,
        window: cfg.quarantine_window,
        cooldown: cfg.quarantine_cooldown,
    });
    let readiness = Readiness::new(cfg.lease_renew_interval);
    let access = ApiAccess::default();
    let mut registry = registry;
    // The client certificate's metrics exist only while one is in use (not for a token).
    let client_cert = crate::credentials::kubeconfig::validity_of_config(&kube_config).map(|v| {
        let m = crate::credentials::metrics::ClientCertMetrics::register(&mut registry);
        m.in_use_until(v.not_after);
        (m, v)
    });
    let exec_metrics = crate::kubelet_api::stream::ExecMetrics::register(&mut registry);
    let limit_metrics = crate::kubelet_api::LimitMetrics::register(&mut registry);
    let image_metrics = crate::images::metrics::ImageMetrics::register(&mut registry);
    let readiness_metrics = node::readiness::ReadinessMetrics::register(&mut registry);
    let vitals_metrics = crate::vitals::metrics::VitalsMetrics::register(&mut registry);
    let process_metrics = crate::metrics::process::ProcessMetrics::register(&mut registry);
    let registry = Arc::new(registry);

    let listener = admin::bind(cfg.admin_addr)
        .await
        .map_err(|source| RunError::Bind {
            addr: cfg.admin_addr,
            source,
        })?;
    let mut tasks_early: Vec<JoinHandle<()>> = Vec::new();
    // With the TLS bootstrap the client certificate renews itself: every client built from
    // `api_tls` presents the new one from its next connection.
    if let (Some(boot), Some(target), Some((cert_metrics, validity))) =
        (&cfg.bootstrap_kubeconfig, &cfg.kubeconfig, client_cert)
    {
        let identity = api_tls.identity().clone();
        let rotation = crate::credentials::Rotation {
            api: kube::Api::all(client.clone()),
            bootstrap: boot.clone(),
            kubeconfig: target.clone(),
            cluster: crate::credentials::kubeconfig::ClusterFacts::of(&kube_config),
            node: cfg.node_name.clone(),
            store: crate::kubelet_api::csr::store::Store::with_prefix(
                &cfg.cert_dir,
                crate::kubelet_api::csr::store::CLIENT,
            ),
            timeout: cfg.api_timeout,
            metrics: cert_metrics,
            install: Arc::new(move |key| identity.replace(key)),
        };
        tasks_early.push(tokio::spawn(
            rotation
                .run(validity, shutdown.clone())
                .instrument(info_span!("client_certificate")),
        ));
    }
    let admin_addr = listener.local_addr().ok();
    info!(addr = ?admin_addr, "admin endpoint listening");
    if let Err(error) = tokio::fs::create_dir_all(&cfg.vm_log_dir).await {
        warn!(%error, dir = %cfg.vm_log_dir.display(), "cannot create the VM log directory");
    }

    let served = pods::served::ServedPods::default();
    let reviewer = Arc::new(crate::kubelet_api::KubeReviewer::new(
        client.clone(),
        cfg.api_timeout,
    ));
    let pods: Arc<dyn crate::kubelet_api::PodSource> = Arc::new(served.clone());
    // One file watch for every log collector and follower of this agent.
    let log_watch = crate::container_logs::LogWatch::start(Default::default());
    let logs = Arc::new(pods::served::logs::PodLogStore::new(
        cfg.pod_log_dir.clone(),
        pods.clone(),
        log_watch.clone(),
    ));
    let exec =
        pods::served::exec::GuestExec::new(served.clone(), cfg.vm_naming.clone(), tart.clone());
    let exec = Some(Arc::new(exec) as Arc<dyn crate::kubelet_api::stream::ExecSource>);
    let (vitals, vitals_task) = crate::vitals::start(
        vitals_start(&cfg, pods.clone(), vitals_metrics),
        shutdown.clone(),
    );
    tasks_early.extend(vitals_task);
    let stats = Some(Arc::new(pods::served::stats::VitalsStats {
        vitals: vitals.clone(),
        pods: pods.clone(),
        naming: cfg.vm_naming.clone(),
        node_name: cfg.node_name.clone(),
        started: k8s_openapi::jiff::Timestamp::now(),
    }) as Arc<dyn crate::kubelet_api::stats::StatsSource>);
    tasks_early.push(tokio::spawn(crate::metrics::process::run(
        process_metrics.clone(),
        shutdown.clone(),
    )));
    let scrape = crate::kubelet_api::scrape::Scrape {
        node_name: cfg.node_name.clone(),
        registry: registry.clone(),
        process: process_metrics,
        probes: pod_metrics.prober.clone(),
    };
    let services = crate::kubelet_api::Services {
        reviewer,
        pods,
        logs: Some(logs),
        exec,
        exec_metrics,
        limit_metrics,
        stats,
        scrape: Some(scrape),
    };
    // The kubelet API's client CA: the option, else the CA the kubeconfig names.
    let client_ca = crate::config::client_ca(
        cfg.client_ca_file.as_deref(),
        kube_config.root_cert.as_deref(),
    );
    match crate::kubelet_api::settings(&cfg, client_ca.clone()) {
        Some(settings) => {
            let running = crate::kubelet_api::start(settings, services, shutdown.clone())
                .await
                .map_err(RunError::KubeletApi)?;
            info!(addr = %running.addr, "kubelet API listening");
            tasks_early.extend(running.tasks);
        }
        None => {
            // No certificate files: the serving certificate comes through the CSR API, and
            // the API is served once an operator has approved the request.
            let ip = internal_ip.parse().unwrap_or(IpAddr::from([127, 0, 0, 1]));
            let bootstrap = crate::kubelet_api::csr::Bootstrap {
                api: kube::Api::all(client.clone()),
                node: cfg.node_name.clone(),
                sans: crate::kubelet_api::csr::sans_for(&cfg.node_name, ip),
                store: crate::kubelet_api::csr::store::Store::new(&cfg.cert_dir),
                timeout: cfg.api_timeout,
                events: node::events::NodeEvents::new(
                    client.clone(),
                    &cfg.node_name,
                    cfg.api_timeout,
                    metrics.clone(),
                    access.clone(),
                ),
                provider: Arc::new(rustls::crypto::ring::default_provider()),
                metrics: metrics.clone(),
            };
            info!(
                cert_dir = %cfg.cert_dir.display(),
                "no --tls-cert-file/--tls-private-key-file: requesting the kubelet API's serving certificate through the CSR API"
            );
            tasks_early.push(tokio::spawn(
                crate::kubelet_api::serve_requested(
                    crate::kubelet_api::listen(&cfg, client_ca),
                    bootstrap,
                    services,
                    shutdown.clone(),
                )
                .instrument(info_span!("kubelet_api_csr")),
            ));
        }
    }

    let (owner_tx, owner_rx) = watch::channel(None);
    let fence = node::fence::Fence::default();
    fence.renewed(claimed.sent, cfg.lease_duration);
    let watch_live = node::watch::WatchLive::default();
    let (node_tx, node_rx) = watch::channel(ObservedNode::Unknown);
    let mut tasks: Vec<JoinHandle<()>> = tasks_early;
    tasks.push(tokio::spawn(
        node::watch::run(
            client.clone(),
            cfg.node_name.clone(),
            node_tx,
            watch_live.clone(),
            shutdown.clone(),
        )
        .instrument(info_span!("node_watch")),
    ));
    tasks.push(tokio::spawn({
        let app = admin::router(registry, readiness.clone());
        let sd = shutdown.clone();
        async move {
            if let Err(error) = admin::serve(listener, app, sd).await {
                error!(%error, "admin endpoint failed");
            }
        }
        .instrument(info_span!("admin"))
    }));
    let (tokens_tx, tokens_rx) = watch::channel(Default::default());
    let mut lease_cfg = kube_config.clone();
    // The Lease client has its own pool and a response deadline of its own.
    lease_cfg.read_timeout = Some(cfg.api_timeout);
    lease_cfg.reset_reader_on_write = true;
    tasks.push(tokio::spawn(
        LeaseTask {
            tokens: tokens_rx,
            kube_config: lease_cfg,
            tls: api_tls.clone(),
            node_name: cfg.node_name.clone(),
            identity: claimed.identity,
            lease: claimed.lease,
            fence: fence.clone(),
            duration: cfg.lease_duration,
            interval: cfg.lease_renew_interval,
            timeout: cfg.api_timeout,
            metrics: metrics.clone(),
            readiness: readiness.clone(),
            access: access.clone(),
            owner: owner_rx,
        }
        .run(shutdown.clone())
        .instrument(info_span!("node_lease")),
    ));
    let images = crate::start_images::start(crate::start_images::ImageDeps {
        cfg: cfg.clone(),
        tart: tart.clone(),
        host: host.clone(),
        client: client.clone(),
        served: served.clone(),
        metrics: image_metrics.clone(),
        node: node_rx.clone(),
        shutdown: shutdown.clone(),
        tokens: tokens_tx,
    });
    tasks.extend(images.tasks);
    let images_rx = images.inventory;
    tasks.push(tokio::spawn(
        node::readiness::HostChecks {
            source: crate::hostcheck::source::Source::new(
                cfg.host_checks_file.clone(),
                cfg.softnet_program.clone(),
            ),
            interval: cfg.host_check_interval,
            deadline: cfg.api_timeout,
            min_free_leases: cfg.vm_slots,
            profiles: cfg.vm_profiles.clone(),
            softnet_program: cfg.softnet_program.clone(),
        }
        .run(health.clone(), readiness_metrics.clone(), shutdown.clone())
        .instrument(info_span!("host_checks")),
    ));
    tasks.push(tokio::spawn(
        StatusLoop {
            client: client.clone(),
            cfg: cfg.clone(),
            tart: tart.clone(),
            host,
            health: health.clone(),
            metrics: metrics.clone(),
            readiness_metrics,
            readiness,
            access,
            owner: owner_tx,
            internal_ip: internal_ip.clone(),
            observed: node_rx.clone(),
            started: Default::default(),
            fence: fence.subscribe(),
            watch_live,
            images: images_rx,
            prepull: images.prepull.clone(),
        }
        .run(shutdown.clone())
        .instrument(info_span!("node_status")),
    ));
    let pod_side = PodSide {
        client,
        cfg: cfg.clone(),
        tart,
        slots,
        health,
        host_ip: internal_ip,
        metrics: pod_metrics,
        api_errors: metrics.api_errors.clone(),
        node: node_rx,
        shutdown: node::fence::pod_shutdown(shutdown.clone(), &fence),
        lease: fence.clone(),
        served,
        image_metrics,
        goldens: images.goldens,
        pacer: images.pacer,
        vitals,
        log_watch,
    };
    tasks.push(tokio::spawn(
        pods::run(pod_side).instrument(info_span!("pods")),
    ));

    let mut sd = shutdown;
    let _ = sd.wait_for(|s| *s).await;
    info!("shutting down; VMs keep running");
    let all = futures::future::join_all(tasks.iter_mut());
    if tokio::time::timeout(SHUTDOWN_GRACE, all).await.is_err() {
        warn!("tasks did not stop in time; aborting them");
        for t in &tasks {
            t.abort();
        }
    }
    info!("stopped");
    Ok(())
}

/// What the vitals sampler needs: the VMs of the Pods bound here and their status shares.
fn vitals_start(
    cfg: &Config,
    pods: Arc<dyn crate::kubelet_api::PodSource>,
    metrics: crate::vitals::metrics::VitalsMetrics,
) -> crate::vitals::Start {
    let naming = cfg.vm_naming.clone();
    let layout = crate::guest_contract::layout::GuestLayout::new(cfg.guest_dir.clone());
    crate::vitals::Start {
        interval: cfg.vitals_interval,
        host_overrides: cfg.vitals_host_file.clone(),
        tart_home: cfg.tart_home.clone(),
        wanted: pods::served::stats::wanted(pods, naming),
        status_dir: Arc::new(move |vm| tart::VmName::new(vm).ok().map(|vm| layout.status(&vm))),
        metrics,
    }
}

/// The client configuration, and which kubeconfig and cluster it came from.
async fn kube_config(cfg: &Config) -> Result<(kube::Config, Origin), RunError> {
    let (mut kc, origin) = match &cfg.kubeconfig {
        Some(path) => {
            let file = kube::config::Kubeconfig::read_from(path)
                .map_err(|e| RunError::KubeConfig(Box::new(e)))?;
            let origin = Origin::of(path, &file);
            let kc = kube::Config::from_custom_kubeconfig(
                file,
                &kube::config::KubeConfigOptions::default(),
            )
            .await
            .map_err(|e| RunError::KubeConfig(Box::new(e)))?;
            (kc, origin)
        }
        None => (
            kube::Config::infer()
                .await
                .map_err(|e| RunError::KubeConfig(Box::new(e)))?,
            Origin::inferred(),
        ),
    };
    kc.connect_timeout = Some(cfg.api_timeout);
    kc.write_timeout = Some(cfg.api_timeout);
    if let Ok(ua) = axum::http::HeaderValue::from_str(&format!(
        "tart-kubelet/{} ({})",
        env!("CARGO_PKG_VERSION"),
        cfg.node_name
    )) {
        kc.headers.push((axum::http::header::USER_AGENT, ua));
    }
    Ok((kc, origin))
}

/// The address this host uses to reach the API server.
async fn internal_ip(kc: &kube::Config) -> IpAddr {
    let host = kc
        .cluster_url
        .host()
        .unwrap_or("127.0.0.1")
        .trim_matches(['[', ']']);
    let peer = match host.parse::<IpAddr>() {
        Ok(ip) => Some(ip),
        Err(_) => tokio::time::timeout(
            Duration::from_secs(5),
            tokio::net::lookup_host((host.to_owned(), 443)),
        )
        .await
        .ok()
        .and_then(Result::ok)
        .and_then(|mut it| it.next())
        .map(|a| a.ip()),
    };
    crate::host::local_ip_towards(peer.unwrap_or(IpAddr::from([127, 0, 0, 1])))
}
