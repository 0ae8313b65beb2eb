//! Pod side of the agent: every Pod bound to this node becomes a Tart VM.
//!
//! Wiring only. Pure cores: [`admission`], [`image`], [`resources`], [`input`], [`plan`],
//! [`status`], [`reasons`], [`events`], [`profile`] (its RuntimeClass cache is I/O). I/O: [`reconcile`] (the Pod object: Pod
//! steps, worker input, status), [`worker`] (the per-Pod task that owns the VM: VM steps),
//! [`recovery`] (restart recovery and orphans), [`sink`] (events), [`pull`] (single-flight pulls
//! and credentials), [`guest_refresh`] (keeping a running guest's volumes current),
//! [`metrics`]. The worker runs the siblings `crate::lifecycle` (probes and hooks),
//! `crate::container_logs` and `crate::guest_contract`, which know nothing of this module.
//! docs/architecture.md draws the arrows between them.
//!
//! Start-up order: register metrics, then (once the node side runs) recovery — re-attach
//! running VMs, then delete orphans — and only then the controller, with field selector
//! `spec.nodeName=<node>`.

pub(crate) mod admission;
pub(crate) mod context;
pub(crate) mod ending;
pub(crate) mod events;
pub(crate) mod fields;
pub(crate) mod guest_refresh;
pub(crate) use crate::images::reference as image;
pub(crate) mod input;
pub(crate) mod launcher;
pub(crate) mod metrics;
pub(crate) mod plan;
pub(crate) mod profile;
pub(crate) mod pull;
pub(crate) mod reasons;
pub(crate) mod reconcile;
pub(crate) mod recovery;
pub(crate) mod resources;
pub(crate) mod served;
pub(crate) mod sink;
pub(crate) mod status;
pub(crate) mod termination;
pub(crate) mod worker;

#[cfg(test)]
pub(crate) mod fixtures;

use std::{sync::Arc, time::Duration};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::{
    Api,
    runtime::{Controller, controller, watcher},
};
use tart::Tart;
use tokio::sync::watch;
use tracing::{Instrument, info, info_span, warn};

use self::{
    admission::HostLimits,
    context::{NodeView, PodsConfig, Shared},
    metrics::PodMetrics,
    plan::Process,
    profile::classes::RuntimeClasses,
    sink::{EventApi, EventSink},
    status::ContainerView,
    worker::{Waker, WorkerConfig, WorkerContext},
};
use crate::{
    backoff::{WATCH_RETRY, WatchBackoff},
    config::{Config, PullCredentials},
    guest_contract::{layout::GuestLayout, prepare::GuestSettings},
    images::{goldens::Goldens, metrics::ImageMetrics, prepull::pacer::Pacer},
    metrics::ApiErrors,
    node::fence::Fence,
    node::health::HostHealth,
    node::watch::ObservedNode,
    quantity::parse_scaled,
    slots::VmSlots,
};

/// VM log files are cut to their last half past this size.
const VM_LOG_CAP: u64 = 64 << 20;

impl PodsConfig {
    /// From the agent configuration.
    pub(crate) fn from_config(cfg: &Config, host_ip: String) -> Self {
        Self {
            node_name: cfg.node_name.clone(),
            host_ip,
            default_grace: cfg.default_termination_grace,
            api_timeout: cfg.api_timeout,
            concurrency: cfg.pod_concurrency,
            gc_interval: Duration::from_secs(60),
            without_finalizer: !cfg.identity.uses_finalizer(),
            vm_profiles: cfg.vm_profiles.clone(),
            host_check_interval: cfg.host_check_interval,
        }
    }
}

impl WorkerConfig {
    /// From the agent configuration; `host_ip` is the Pods' `status.hostIP`.
    pub(crate) fn from_config(cfg: &Config, host_ip: &str) -> Self {
        Self {
            vm_log_dir: cfg.vm_log_dir.clone(),
            vm_log_cap_bytes: VM_LOG_CAP,
            run_start_window: cfg.run_start_window,
            ip_wait: cfg.ip_wait,
            read_pull_secrets: cfg.pull_credentials == PullCredentials::PodSecrets,
            api_timeout: cfg.api_timeout,
            pod_log_dir: cfg.pod_log_dir.clone(),
            launcher: cfg.guest_launcher,
            launcher_timeout: cfg.guest_launcher_timeout,
            guest: GuestSettings {
                layout: GuestLayout::new(cfg.guest_dir.clone()),
                node_name: cfg.node_name.clone(),
                host_ip: host_ip.to_owned(),
                api_timeout: cfg.api_timeout,
                token_refresh_max: cfg.token_refresh_max,
            },
        }
    }
}

/// What the Pod side is given: the node side's shared pieces and its own metrics, registered
/// before anything was built.
pub(crate) struct PodSide<T: Tart> {
    /// API client (the main one; the Lease has its own).
    pub client: kube::Client,
    /// Configuration.
    pub cfg: Arc<Config>,
    /// Tart driver (built with `metrics` as its observer).
    pub tart: Arc<T>,
    /// The node's VM slots.
    pub slots: VmSlots,
    /// Where host faults and VM starts are reported (the node's `TartReady`).
    pub health: HostHealth,
    /// The node's InternalIP (the Pods' hostIP).
    pub host_ip: String,
    /// The Pod side's metrics.
    pub metrics: PodMetrics,
    /// `tart_kubelet_api_errors_total` (resources `pod` and `event` here).
    pub api_errors: ApiErrors,
    /// Our Node as the node side's one watch sees it: allocatable, and whether it was deleted.
    pub node: watch::Receiver<ObservedNode>,
    /// Turns true on shutdown, or when another agent instance holds our Node's Lease.
    pub shutdown: watch::Receiver<bool>,
    /// Whether this agent holds its Node's Lease: nothing is published without it.
    pub lease: Fence,
    /// Where the kubelet API finds the Pods this agent runs (set once the controller starts).
    pub served: served::ServedPods,
    /// Image metrics (golden hits and misses).
    pub image_metrics: ImageMetrics,
    /// Golden base VMs per digest (shared with the image keeper, which they wake).
    pub goldens: Goldens,
    /// The fleet's pull tokens.
    pub pacer: Pacer,
    /// The VMs' vitals (a death's explanation).
    pub vitals: crate::vitals::Vitals,
    /// The agent's file watch for container logs (shared with the kubelet API's followers).
    pub log_watch: crate::container_logs::LogWatch,
}

/// Run the Pod side until shutdown: restart recovery, then the Pod controller. Workers end with
/// it; VMs keep running (they outlive the agent).
pub(crate) async fn run<T: Tart>(deps: PodSide<T>) {
    let cfg = PodsConfig::from_config(&deps.cfg, deps.host_ip.clone());
    let naming = deps.cfg.vm_naming.clone();
    let (wake_tx, wake_rx) = futures::channel::mpsc::unbounded();
    let (wake_all_tx, wake_all_rx) = futures::channel::mpsc::unbounded::<()>();
    let (node_tx, node_rx) = watch::channel(NodeView::default());
    let worker = Arc::new(WorkerContext {
        client: deps.client.clone(),
        tart: deps.tart.clone(),
        cfg: WorkerConfig::from_config(&deps.cfg, &deps.host_ip),
        slots: deps.slots.clone(),
        health: deps.health.clone(),
        events: EventSink::spawn(
            deps.client.clone(),
            &cfg.node_name,
            cfg.api_timeout,
            deps.api_errors.clone(),
            if deps.cfg.identity.uses_finalizer() {
                EventApi::EventsV1
            } else {
                EventApi::CoreV1
            },
            deps.lease.clone(),
        ),
        metrics: deps.metrics.clone(),
        pulls: Default::default(),
        goldens: deps.goldens.clone(),
        image_metrics: deps.image_metrics.clone(),
        pacer: Some(deps.pacer.clone()),
        waker: Waker::new(wake_tx),
        vitals: deps.vitals.clone(),
        running: deps.served.running().clone(),
        log_watch: deps.log_watch.clone(),
    });
    let class_writer = kube::runtime::reflector::store::Writer::default();
    let classes = RuntimeClasses::new(&class_writer);
    tokio::spawn(
        profile::classes::run(
            deps.client.clone(),
            class_writer,
            wake_all_tx.clone(),
            deps.shutdown.clone(),
        )
        .instrument(info_span!("runtimeclass_watch")),
    );
    let shared = Arc::new(Shared {
        classes,
        client: deps.client.clone(),
        worker,
        naming,
        node: node_rx,
        workers: Default::default(),
        api_failures: Default::default(),
        api_errors: deps.api_errors.clone(),
        lease: deps.lease.clone(),
        cfg,
    });
    let mut shutdown = deps.shutdown.clone();
    tokio::spawn(
        follow_node(
            shared.cfg.node_name.clone(),
            deps.node.clone(),
            node_tx,
            wake_all_tx,
            shutdown.clone(),
        )
        .instrument(info_span!("pods_node")),
    );
    tokio::spawn(population(shared.clone(), shutdown.clone()));

    // Restart recovery before the controller: adopt running VMs, then delete orphans. The
    // recovered Pods' VM profiles are looked up in the RuntimeClass cache, so it lists first.
    shared.classes.wait_ready(shared.cfg.api_timeout).await;
    loop {
        match recovery::recover(&shared).await {
            Ok(orphans) => {
                info!(
                    adopted = shared.with_workers(|w| w.len()),
                    orphans = orphans.len(),
                    "recovery done"
                );
                recovery::collect(&shared, orphans).await;
                break;
            }
            Err(error) => warn!(%error, "recovery failed; retrying"),
        }
        tokio::select! {
            () = tokio::time::sleep(Duration::from_secs(5)) => {}
            _ = shutdown.wait_for(|s| *s) => return,
        }
    }

    let pods: Api<Pod> = Api::all(shared.client.clone());
    let wc = watcher::Config::default().fields(&format!("spec.nodeName={}", shared.cfg.node_name));
    // A watch that lost the API server re-lists within about a second of its return, so Pod
    // status the node lifecycle controller changed meanwhile is put right at once.
    let controller = Controller::new(pods, wc)
        .with_config(
            controller::Config::default()
                .concurrency(shared.cfg.concurrency)
                .debounce(Duration::from_millis(50)),
        )
        .trigger_backoff(WatchBackoff::new(WATCH_RETRY));
    deps.served.set(controller.store());
    tokio::spawn(
        recovery::sweep_loop(shared.clone(), controller.store(), shutdown.clone())
            .instrument(info_span!("vm_gc")),
    );
    let mut sd = shutdown.clone();
    controller
        .reconcile_on(wake_rx)
        .reconcile_all_on(wake_all_rx)
        .graceful_shutdown_on(async move {
            let _ = sd.wait_for(|s| *s).await;
        })
        .run(
            reconcile::reconcile,
            reconcile::error_policy,
            shared.clone(),
        )
        .for_each(|_| futures::future::ready(()))
        .await;
    // Workers end with their handles; VMs keep running (they must outlive the agent).
    shared.with_workers(|w| w.clear());
    info!("pod controller stopped");
}

/// Keep [`NodeView`] current from the node side's one watch on our Node (shared, so the Pod
/// side adds no API load of its own): allocatable for admission, and whether the Node was
/// deleted.
async fn follow_node(
    node_name: String,
    mut observed: watch::Receiver<ObservedNode>,
    tx: watch::Sender<NodeView>,
    wake_all: futures::channel::mpsc::UnboundedSender<()>,
    mut shutdown: watch::Receiver<bool>,
) {
    // Gone only after it was seen: at start-up the node side may still be creating it.
    let mut seen = false;
    loop {
        let update = node_view(&observed.borrow_and_update(), &mut seen, *tx.borrow());
        if let Some(new) = update
            && tx.send_if_modified(|v| std::mem::replace(v, new) != new)
        {
            if new.gone {
                warn!(node = %node_name, "our Node is gone; releasing its Pods");
            }
            // Admission limits or the Node's presence changed: every Pod may decide anew.
            let _ = wake_all.unbounded_send(());
        }
        tokio::select! {
            r = observed.changed() => if r.is_err() { return },
            _ = shutdown.wait_for(|s| *s) => return,
        }
    }
}

/// What the Pod side makes of one observation of our Node; `None` leaves the view as it is.
fn node_view(obs: &ObservedNode, seen: &mut bool, prev: NodeView) -> Option<NodeView> {
    match obs {
        ObservedNode::Unknown => None,
        ObservedNode::Present(n) => {
            *seen = true;
            Some(NodeView {
                gone: false,
                limits: node_limits(n).or(prev.limits),
            })
        }
        ObservedNode::Absent if *seen => Some(NodeView {
            gone: true,
            limits: prev.limits,
        }),
        ObservedNode::Absent => None,
    }
}

/// Allocatable cpu, memory and ephemeral storage of a Node, when all three are known.
fn node_limits(n: &Node) -> Option<HostLimits> {
    let alloc = n.status.as_ref().and_then(|s| s.allocatable.as_ref());
    let get = |k: &str, scale| {
        alloc
            .and_then(|a| a.get(k))
            .and_then(|q| parse_scaled(&q.0, scale))
            .and_then(|v| u64::try_from(v).ok())
    };
    Some(HostLimits {
        cpu_millis: get("cpu", 1000)?,
        memory_bytes: get("memory", 1)?,
        disk_bytes: get("ephemeral-storage", 1)?,
    })
}

/// Refresh the pending-age and VM-state gauges every few seconds, so a start that takes hours
/// is visible while it happens.
async fn population<T: Tart>(shared: Arc<Shared<T>>, mut shutdown: watch::Receiver<bool>) {
    loop {
        let now = k8s_openapi::jiff::Timestamp::now();
        let (ages, vms) = shared.with_workers(|w| {
            let mut ages = vec![];
            let mut vms = [0i64; 3];
            for h in w.values() {
                let s = h.state.borrow();
                let i = h.input.borrow();
                let alive = matches!(s.facts.process, Process::Running { .. });
                let deleting = i.facts.deleting;
                if alive && deleting {
                    vms[2] += 1;
                } else if alive {
                    vms[1] += 1;
                } else if !s.facts.finished && !deleting {
                    vms[0] += 1;
                }
                let pending = matches!(s.view, ContainerView::Waiting { .. })
                    && s.last_terminated.is_none()
                    && !deleting;
                if pending && let Some(c) = i.created {
                    ages.push(Duration::try_from(now.duration_since(c)).unwrap_or_default());
                }
            }
            (ages, vms)
        });
        shared.worker.metrics.set_population(&ages, vms);
        tokio::select! {
            () = tokio::time::sleep(Duration::from_secs(5)) => {}
            _ = shutdown.wait_for(|s| *s) => return,
        }
    }
}

#[cfg(test)]
mod tests;
