//! What a worker publishes, and which of its changes wake the reconciler.
//!
//! Every change is published on the worker's watch channel, where the reconciler reads the
//! latest state whenever it runs. A wake-up queues a reconcile; it is needed only when the
//! change alters something the reconciler acts on: the Pod status it renders, or the Pod step
//! [`plan`](crate::pods::plan::plan) decides from the VM's facts. The provisioning progress
//! (image present, cloned, configured, slot held, guest prepared) alters neither while the
//! container waits `ContainerCreating`, except a VM's going: a deleted Pod's finalizer can go
//! once no VM may exist. A wake-up costs a thread hand-off in the middle of a start: skipping
//! the ones the reconciler would not act on keeps the start's steps on the worker's thread
//! (docs/performance.md, "Agent overhead per Pod").

use std::net::Ipv4Addr;

use tart::VmName;

use crate::guest_contract::job::JobActivity;
use crate::pods::{
    plan::VmFacts,
    reasons::WaitingReason,
    status::{ContainerView, Terminated},
};

/// What the worker publishes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct WorkerState {
    /// Facts for [`plan`](crate::pods::plan::plan).
    pub facts: VmFacts,
    pub vm: VmName,
    /// Container state for status.
    pub view: ContainerView,
    /// Previous run.
    pub last_terminated: Option<Terminated>,
    pub pod_ip: Option<Ipv4Addr>,
    /// The VM was found running after an agent restart.
    pub adopted: bool,
    /// `<host>/<repository>@sha256:<hex>` of the image, once known (the Pod's `imageID`).
    pub image_id: Option<String>,
    /// What the job says about itself (busy, idle, ended), once it said anything.
    pub job: Option<JobActivity>,
}

impl WorkerState {
    /// A new worker's state: nothing done yet, the container waiting `ContainerCreating` (as
    /// kubelet shows a container before it exists).
    pub(crate) fn creating(vm: VmName) -> Self {
        Self {
            facts: VmFacts::default(),
            vm,
            view: ContainerView::waiting(WaitingReason::ContainerCreating, None),
            last_terminated: None,
            pod_ip: None,
            adopted: false,
            image_id: None,
            job: None,
        }
    }
}

/// Whether going from `before` to `after` changes what the reconciler acts on.
pub(super) fn wakes_reconciler(before: &WorkerState, after: &WorkerState) -> bool {
    // Destructured so that a field added to the state is compared unless it is left out here
    // on purpose.
    let WorkerState {
        facts,
        vm,
        view,
        last_terminated,
        pod_ip,
        adopted,
        image_id,
        job,
    } = after;
    let (now, may_exist) = as_reconciler_sees(*facts);
    let (was, might_have_existed) = as_reconciler_sees(before.facts);
    now != was
        || (might_have_existed && !may_exist)
        || *vm != before.vm
        || *view != before.view
        || *last_terminated != before.last_terminated
        || *pod_ip != before.pod_ip
        || *adopted != before.adopted
        || *image_id != before.image_id
        || *job != before.job
}

/// The facts without the provisioning progress, and whether a VM (or its guest directory) may
/// exist: the deletion of a Pod removes its VM if so, or else its finalizer at once. Only the
/// VM's going wakes the reconciler (the finalizer can go); its coming does not, since the
/// worker of a deleted Pod deletes the VM itself and the reconciler reads the state whenever
/// the deletion wakes it.
fn as_reconciler_sees(f: VmFacts) -> (VmFacts, bool) {
    let may_exist = f.cloned || f.prepared;
    let without_progress = VmFacts {
        image_ready: false,
        cloned: false,
        configured: false,
        prepared: false,
        slot_held: false,
        ..f
    };
    (without_progress, may_exist)
}
