//! The worker's state by lifetime, beside the long-lived `Worker` itself: what lives as long
//! as the provisioned VM ([`Provisioning`]) and what lives for one run ([`Run`]). Each is
//! dropped as one; the step files (`provision.rs`, `run.rs`, `termination.rs`) work on them.

use std::sync::Arc;

use k8s_openapi::jiff::Timestamp;
use tart::Tart;
use tokio::time::Instant;

use super::guest_write::GuestWrite;
use crate::container_logs::CollectorHandle;
use crate::guest_contract::prepare::Tokens;
use crate::lifecycle::probes::ProberHandle;
use crate::pods::served::RunListing;
use crate::pods::{
    ending::{AgentStop, StopSignal},
    guest_refresh::RefreshTask,
    image::ImageRef,
};
use crate::slots::SlotGuard;

// === Provisioning ===

/// What lives as long as the provisioned VM: from the worker's start until the VM is deleted.
#[derive(Default)]
pub(super) struct Provisioning {
    /// Credentials from the Pod's `imagePullSecrets`, once read.
    pub(super) creds: Option<tart::Credentials>,
    /// The image's digest, once known.
    digest: Option<String>,
    /// The VM was cloned from a golden base (its serial is made fresh by `tart set`).
    pub(super) from_golden: bool,
    /// The guest's `--dir` shares, once written.
    pub(super) shares: Vec<tart::DirShare>,
    /// The guest's files from their resolution until the run waits for their write (or the
    /// delete lets it end); the clone or the set starts the write.
    pub(super) writing: Option<GuestWrite>,
    /// Tokens issued while preparing, handed to the first run's refresher.
    pub(super) tokens: Option<Tokens>,
    /// The VM was adopted after an agent restart with a status share its launcher had
    /// reported in: its job's marks and end are read from it, though its shares are not
    /// prepared in this incarnation.
    pub(super) adopted_status: bool,
}

impl Provisioning {
    /// Whether the VM's run has a status share to read: its shares were prepared, or it was
    /// adopted with one.
    pub(super) fn has_status_share(&self) -> bool {
        !self.shares.is_empty() || self.adopted_status
    }

    /// The image's digest: its own when pinned, else the digest its cached tag points at
    /// (Tart's default tag is `latest`). Resolved once per provisioning, so the VM's clone and
    /// the `imageID` reported for it name the same image even if the tag moves meanwhile; a
    /// digest not known yet (the tag not cached) is asked for again.
    pub(super) async fn digest<T: Tart>(&mut self, tart: &T, image: &ImageRef) -> Option<String> {
        if self.digest.is_none() {
            self.digest = match &image.digest {
                Some(d) => Some(d.clone()),
                None => {
                    let tag = image.tag.as_deref().unwrap_or("latest");
                    tart.cached_digest(&image.host, &image.repository, tag)
                        .await
                }
            };
        }
        self.digest.clone()
    }
}

/// `<host>/<repository>@<digest>`: the image pinned to `digest` (the Pod's `imageID`, and what a
/// golden base is made from).
pub(super) fn pinned(image: &ImageRef, digest: &str) -> String {
    format!("{}/{}@{digest}", image.host, image.repository)
}

// === Run ===

/// One run of the VM. Dropping it ends the run's tasks: the refresher and the prober at once
/// (their handles abort on drop), the collector after a last read of the run's output (its
/// dropped handle stops it, and its task finishes that read in the background, so the run's
/// end is handled at once); the slot is freed with its guard.
pub(super) struct Run<V> {
    /// The `tart run` process.
    pub(super) proc: Arc<V>,
    /// The node's VM slot it holds (none for a VM adopted without one).
    _slot: Option<SlotGuard>,
    /// Its place among the VMs this agent runs (what exec asks): listed while the run lives.
    _listed: RunListing,
    /// When it began (monotonic, wall); `None` for a run adopted after an agent restart.
    pub(super) started: Option<(Instant, Timestamp)>,
    /// Keeps the running guest's volumes current.
    pub(super) refresher: Option<RefreshTask>,
    /// Copies the run's output into the Pod's log.
    pub(super) collector: Option<CollectorHandle>,
    /// Probes the running guest; dropped early when the agent stops the run.
    pub(super) prober: Option<ProberHandle>,
    /// The agent stopped this run, and what the job got: its end is reported as the agent's
    /// doing ([`crate::pods::ending`]).
    pub(super) stopped: Option<(AgentStop, StopSignal)>,
}

impl<V> Run<V> {
    /// A run of `proc` that holds `slot` and its listing until it ends; its tasks are attached
    /// as they start.
    pub(super) fn new(
        proc: V,
        slot: Option<SlotGuard>,
        listed: RunListing,
        started: Option<(Instant, Timestamp)>,
    ) -> Self {
        Self {
            proc: Arc::new(proc),
            _slot: slot,
            _listed: listed,
            started,
            refresher: None,
            collector: None,
            prober: None,
            stopped: None,
        }
    }
}
