//! Restart recovery and orphan garbage collection.
//!
//! Recovery runs once, before the controller starts: list local VMs, keep those whose name is
//! ours ([`VmNaming::pod_uid`](crate::vm_name::VmNaming::pod_uid)), and give each one whose Pod
//! still exists a worker — re-attached to its live `tart run` process when there is one (found
//! by the `config.json` lock, not by `tart ip`), so a running VM is never started again and
//! its histograms are never observed again; it keeps the start time its Pod's status already
//! shows. Only after that are VMs with our prefix that no Pod
//! owns stopped and deleted. The periodic sweep does the same for Pods that vanished while we
//! ran (force-deleted, deleted once our finalizer was gone, or removed by pod GC after our
//! Node was deleted): the controller never reconciles those deletions, so the sweep compares
//! the workers with the Pod watch's cache.

use std::{
    collections::{HashMap, HashSet},
    sync::Arc,
    time::Duration,
};

use k8s_openapi::{
    api::core::v1::{ObjectReference, Pod},
    jiff::Timestamp,
};
use kube::{
    Api, ResourceExt,
    api::ListParams,
    runtime::reflector::{ObjectRef, Store},
};
use tart::{Source, Tart, VmName};
use tokio::{sync::watch, time::Instant};
use tracing::{debug, info, warn};

use super::{
    admission::{HostLimits, admit},
    context::Shared,
    input::{pod_facts, restart_count, running_since, started_before, worker_input},
    worker::{self, Start},
};

/// Our local VMs, by Pod UID.
async fn our_vms<T: Tart>(shared: &Shared<T>) -> Result<HashMap<String, VmName>, tart::Error> {
    let list = shared.worker.tart.list().await?;
    Ok(list
        .into_iter()
        .filter(|v| v.source == Source::Local)
        .filter_map(|v| {
            let uid = shared.naming.pod_uid(&v.name)?.to_owned();
            VmName::new(v.name).ok().map(|n| (uid, n))
        })
        .collect())
}

/// The Pods bound to our node, straight from the API server.
async fn bound_pods<T: Tart>(shared: &Shared<T>) -> Result<Vec<Pod>, String> {
    let api: Api<Pod> = Api::all(shared.client.clone());
    let lp = ListParams::default().fields(&format!("spec.nodeName={}", shared.cfg.node_name));
    let pods = tokio::time::timeout(shared.cfg.api_timeout, api.list(&lp))
        .await
        .map_err(|_| "listing pods timed out".to_owned())?
        .map_err(|e| format!("listing pods: {e}"))?;
    Ok(pods.items)
}

/// Re-bind VMs to their Pods and return the orphans. Errors only when the API or tart cannot
/// be listed at all (the caller retries).
///
/// # Errors
/// A message naming what could not be listed.
pub(crate) async fn recover<T: Tart>(shared: &Arc<Shared<T>>) -> Result<Vec<VmName>, String> {
    // Each worker keeps its Pod: one Arc per Pod, made once here.
    let pods: Vec<Arc<Pod>> = bound_pods(shared)
        .await?
        .into_iter()
        .map(Arc::new)
        .collect();
    let vms = our_vms(shared)
        .await
        .map_err(|e| format!("listing VMs: {e}"))?;
    let by_uid: HashMap<String, &Arc<Pod>> = pods
        .iter()
        .filter_map(|p| p.uid().map(|u| (u, p)))
        .collect();
    let mut orphans = vec![];
    for (uid, vm) in vms {
        let Some(pod) = by_uid.get(&uid) else {
            orphans.push(vm);
            continue;
        };
        let Ok(admitted) = admit(pod, &HostLimits::UNLIMITED) else {
            warn!(%vm, pod = %pod.name_any(), "VM of a Pod that is not admissible; leaving it to teardown");
            orphans.push(vm);
            continue;
        };
        let input = worker_input(
            pod,
            &admitted,
            pod_facts(pod, false, shared.cfg.without_finalizer, Timestamp::now()),
            shared.cfg.default_grace,
            shared.profile_for(pod),
        );
        let opts = shared.worker.cfg.run_opts(&vm);
        let start = match shared.worker.tart.attach(&vm, &opts).await {
            Ok(Some(proc)) => {
                info!(%vm, pod = %pod.name_any(), "adopted running VM");
                Start::Adopted {
                    vm: proc,
                    slot: shared.worker.slots.acquire_for_adopted(&uid),
                    started_at: running_since(pod),
                }
            }
            // A VM whose `tart run` log exists was started by an earlier incarnation, even when
            // it ended before its Pod's status said so: it is not provisioned (or counted) again.
            Ok(None) if started_before(pod) || ran_before(&opts.log_path).await => {
                info!(%vm, pod = %pod.name_any(), "VM stopped while the agent was away");
                Start::ExitedUnwatched
            }
            Ok(None) => {
                info!(%vm, pod = %pod.name_any(), "found stopped VM");
                Start::Cloned
            }
            Err(error) => {
                warn!(%vm, %error, "cannot tell whether the VM runs; treating it as stopped");
                Start::Cloned
            }
        };
        let prior = restart_count(pod);
        let h = worker::spawn(shared.worker.clone(), vm, input, start, prior);
        shared.with_workers(|w| w.insert(uid, h));
    }
    Ok(orphans)
}

/// Whether `tart run` was ever started for the VM whose run log is `log`.
async fn ran_before(log: &std::path::Path) -> bool {
    tokio::fs::try_exists(log).await.unwrap_or(false)
}

/// Stop (if running) and delete VMs no Pod owns, one [`remove_orphan`] each.
pub(crate) async fn collect<T: Tart>(shared: &Shared<T>, orphans: Vec<VmName>) {
    for vm in orphans {
        remove_orphan(shared, &vm).await;
    }
}

/// Stop (if running) and delete one VM no Pod and no worker owns, then remove what the agent
/// keeps for it on the host (its `tart run` log). Failures are logged; the next sweep retries.
/// This is the one place that removes an orphan's host-side state.
pub(crate) async fn remove_orphan<T: Tart>(shared: &Shared<T>, vm: &VmName) {
    let tart = &shared.worker.tart;
    let opts = shared.worker.cfg.run_opts(vm);
    match tart.attach(vm, &opts).await {
        Ok(Some(proc)) => {
            if let Err(error) = tart.stop(&proc, ORPHAN_STOP_GRACE).await {
                warn!(%vm, %error, "cannot stop orphan VM");
                return;
            }
            info!(%vm, "stopped orphan VM");
        }
        Ok(None) => {}
        Err(error) => {
            warn!(%vm, %error, "cannot check orphan VM");
            return;
        }
    }
    match tart.delete(vm).await {
        Ok(()) => {
            info!(%vm, "deleted orphan VM");
            let _ = tokio::fs::remove_file(opts.log_path).await;
            remove_guest_dirs(shared, GuestDirs::Of(vm.clone())).await;
        }
        Err(error) => warn!(%vm, %error, "cannot delete orphan VM"),
    }
}

/// Which guest directories to remove.
enum GuestDirs {
    /// The one of this VM.
    Of(VmName),
    /// Every one of ours whose VM is not in this set.
    AllBut(HashSet<String>),
}

/// Remove guest directories (shares, volumes, tokens: they hold Secret values) without a VM.
async fn remove_guest_dirs<T: Tart>(shared: &Shared<T>, which: GuestDirs) {
    let layout = shared.worker.cfg.guest.layout.clone();
    let prefix = shared.naming.prefix().to_owned();
    let res = tokio::task::spawn_blocking(move || match which {
        GuestDirs::Of(vm) => layout.remove(&vm).map(|()| vec![vm.to_string()]),
        GuestDirs::AllBut(keep) => layout.sweep(&prefix, &keep),
    })
    .await;
    match res {
        Ok(Ok(removed)) => {
            if !removed.is_empty() {
                debug!(?removed, "guest directories removed");
            }
        }
        Ok(Err(error)) => warn!(%error, "cannot remove guest directories"),
        Err(error) => warn!(%error, "cannot remove guest directories"),
    }
}

/// How long an orphan VM is given to shut down before it is killed: its Pod is gone, so
/// nobody waits on its grace period.
const ORPHAN_STOP_GRACE: Duration = Duration::from_secs(5);

/// How often the watch cache is compared with the workers: kubelet's housekeeping period. It
/// costs no API request.
const HOUSEKEEPING: Duration = Duration::from_secs(2);

/// From the Pod watch's cache (`store`, the controller's), once it holds a full list: every
/// [`HOUSEKEEPING`] tear down the workers of Pods that are gone, and every `gc_interval`
/// [`sweep`] the VMs too. The cache is swapped whole on every re-list, so a Pod is missing
/// from it only when the API server said it was deleted; no Pod is read one by one (that
/// would need `get` on every Pod, which `packaging/kubernetes/rbac.yaml` does not grant).
pub(crate) async fn sweep_loop<T: Tart>(
    shared: Arc<Shared<T>>,
    store: Store<Pod>,
    mut shutdown: watch::Receiver<bool>,
) {
    let interval = shared.cfg.gc_interval;
    let mut next_sweep: Option<Instant> = None;
    loop {
        tokio::select! {
            () = tokio::time::sleep(HOUSEKEEPING) => {}
            _ = shutdown.wait_for(|s| *s) => return,
        }
        if !super::served::listed(&store) {
            continue;
        }
        teardown_vanished(&shared, &store);
        let due = *next_sweep.get_or_insert_with(|| Instant::now() + interval);
        if Instant::now() >= due {
            let known: HashSet<String> = store.state().iter().filter_map(|p| p.uid()).collect();
            sweep(&shared, &known).await;
            next_sweep = Some(Instant::now() + interval);
        }
    }
}

/// Whether the Pod a worker runs (UID `uid`, `obj`) is missing from `store`: no Pod of its
/// namespace and name, or a new Pod of that name.
fn vanished(store: &Store<Pod>, uid: &str, obj: &ObjectReference) -> bool {
    let (Some(ns), Some(name)) = (obj.namespace.as_deref(), obj.name.as_deref()) else {
        return false;
    };
    store
        .get(&ObjectRef::new(name).within(ns))
        .is_none_or(|p| p.uid().as_deref() != Some(uid))
}

/// Tear down the workers of Pods that are gone (force-deleted, deleted after our finalizer
/// was removed, or deleted by pod GC after our Node went away: the controller reconciles none
/// of those deletions). `store` holds every Pod bound to us, from a complete list; each
/// worker's Pod is looked up by name, so the work grows with the workers, not the Pods.
fn teardown_vanished<T: Tart>(shared: &Shared<T>, store: &Store<Pod>) {
    let gone: Vec<String> = shared.with_workers(|w| {
        w.iter()
            .filter(|(uid, h)| vanished(store, uid, &h.input.borrow().obj))
            .map(|(uid, _)| uid.clone())
            .collect()
    });
    for uid in gone {
        teardown_worker(shared, &uid);
    }
}

/// One pass over the VMs: stop and delete ours that have neither a Pod in `known` nor a
/// worker (the workers of vanished Pods are gone already: [`teardown_vanished`]).
pub(crate) async fn sweep<T: Tart>(shared: &Shared<T>, known: &HashSet<String>) {
    let vms = match our_vms(shared).await {
        Ok(v) => v,
        Err(error) => {
            warn!(%error, "gc: cannot list VMs");
            return;
        }
    };
    // A guest directory whose VM is gone (and no worker is about to start it) is a leftover.
    let mut keep: HashSet<String> = vms.values().map(ToString::to_string).collect();
    shared.with_workers(|w| keep.extend(w.values().map(|h| h.state.borrow().vm.to_string())));
    remove_guest_dirs(shared, GuestDirs::AllBut(keep)).await;
    let orphans: Vec<VmName> = vms
        .into_iter()
        .filter(|(uid, _)| !known.contains(uid) && !shared.with_workers(|w| w.contains_key(uid)))
        .map(|(_, vm)| vm)
        .collect();
    debug!(orphans = orphans.len(), "gc: swept");
    collect(shared, orphans).await;
}

/// Drop the worker of a vanished Pod. Dropping its handle aborts the task: its in-flight tart
/// call is killed with it and its slot is released; the VM, running in its own session, is
/// left for [`remove_orphan`].
fn teardown_worker<T: Tart>(shared: &Shared<T>, uid: &str) {
    if let Some(h) = shared.with_workers(|w| w.remove(uid)) {
        info!(pod.uid = %uid, vm = %h.state.borrow().vm, "pod vanished; its worker is torn down");
        drop(h);
        shared.worker.events.forget(uid);
        shared.worker.metrics.prober.forget(uid);
    }
}

#[cfg(test)]
mod tests;
