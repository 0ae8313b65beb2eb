//! Provisioning: what a Pod's VM gets before it first runs — its image pulled, the VM cloned
//! (from the image's golden base when there is one) and set as the Pod asks. The state these
//! steps keep for as long as the VM lives (credentials, the image's digest resolved once, the
//! golden) is a [`Provisioning`](super::lifetimes::Provisioning). Each step is bounded (tart
//! deadlines inside the tart crate, API deadlines here) and cancelled by a teardown. The clone
//! and the set each start the guest's write once their tart step is under way, if it has not
//! started ([`alongside`]).

use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use tart::{SetOpts, Source, Tart};
use tokio::{sync::watch, time::Instant};
use tracing::{info, warn};

use super::{
    Worker, WorkerContext, WorkerInput, WorkerState,
    guest_write::{alongside, start},
    lifetimes::pinned,
    outcomes::Failure,
    teardown,
};
use crate::images::goldens::GoldenResult;
use crate::pods::{
    events::Occurrence,
    image::{ImageRef, PullDecision, PullPolicy, pull_decision},
    metrics::Stage,
    pull::credentials_for,
    reasons::WaitingReason,
    status::ContainerView,
};

impl<T: Tart> Worker<T> {
    async fn credentials(&mut self, input: &WorkerInput) -> Option<tart::Credentials> {
        let p = &mut self.prov;
        if p.creds.is_none() && self.ctx.cfg.read_pull_secrets && !input.pull_secrets.is_empty() {
            let api: Api<Secret> = Api::namespaced(self.ctx.client.clone(), &input.namespace);
            p.creds = credentials_for(
                &api,
                &input.pull_secrets,
                &input.image.host,
                self.ctx.cfg.api_timeout,
            )
            .await;
        }
        p.creds.clone()
    }

    pub(super) async fn pull(&mut self, input: &WorkerInput, out: &watch::Sender<WorkerState>) {
        let tart = self.ctx.tart.clone();
        let cache_name = input.image.cache_name();
        let cached = match input.pull_policy {
            PullPolicy::Always => false,
            _ => match tart.list().await {
                Ok(l) => l
                    .iter()
                    .any(|v| v.source == Source::Oci && v.name == cache_name),
                Err(error) => {
                    warn!(%error, "tart list failed; treating the image as not cached");
                    false
                }
            },
        };
        let n = self.fail_seq;
        match pull_decision(input.pull_policy, cached) {
            PullDecision::UseCached => {
                let occ = Occurrence::AlreadyPresent {
                    image: input.image.to_string(),
                };
                self.emit(input, n, occ);
                self.state.facts.image_ready = true;
            }
            PullDecision::NeverPullMissing => {
                let msg = format!(
                    "Container image \"{}\" is not present with pull policy of Never",
                    input.image
                );
                self.fail_with(input, Failure::Create, tart::ErrorKind::NotFound, msg);
                self.state.view = ContainerView::waiting(WaitingReason::ErrImageNeverPull, None);
                let occ = Occurrence::NeverPull {
                    image: input.image.to_string(),
                };
                self.emit(input, self.fail_seq, occ);
            }
            PullDecision::Pull => {
                let occ = Occurrence::Pulling {
                    image: input.image.to_string(),
                };
                self.emit(input, n, occ);
                self.publish(out);
                let creds = self.credentials(input).await;
                let started = Instant::now();
                let pulls = self.ctx.pulls.clone();
                // The fleet's pull token: never waited for, but pre-pulls count it.
                let token = self
                    .ctx
                    .pacer
                    .as_ref()
                    .map(|p| p.pod_pull(input.image.as_str()));
                let res = tokio::select! {
                    r = pulls.pull(tart, input.image.as_str(), creds) => r,
                    () = teardown(&mut self.input) => return,
                };
                if let (Some(t), Ok(())) = (token, &res) {
                    t.finish(started.elapsed(), input.image.cache_name());
                }
                self.ctx.metrics.stage(Stage::Pull, started.elapsed());
                match res {
                    Ok(()) => {
                        let occ = Occurrence::Pulled {
                            image: input.image.to_string(),
                            took: started.elapsed(),
                        };
                        self.emit(input, n, occ);
                        self.state.facts.image_ready = true;
                        self.state.view =
                            ContainerView::waiting(WaitingReason::ContainerCreating, None);
                    }
                    Err(f) => self.fail_with(input, Failure::Image, f.kind, f.message),
                }
            }
        }
    }

    pub(super) async fn clone_vm(&mut self, input: &WorkerInput) {
        let tart = self.ctx.tart.clone();
        let creds = self.credentials(input).await;
        let vm = self.state.vm.clone();
        let started = Instant::now();
        // Out of `prov` while the step borrows it for the digest; put back however it ends.
        let mut write = self.prov.writing.take();
        let res = tokio::select! {
            r = alongside(async {
                let digest = self.prov.digest(&*tart, &input.image).await;
                let source = clone_source(&self.ctx, &input.image, digest, creds.clone()).await;
                let from_golden = source.is_some();
                let source = source.unwrap_or_else(|| input.image.as_str().to_owned());
                tart.clone_vm(&source, &vm, creds.as_ref()).await.map(|()| from_golden)
            }, || start(&mut write)) => Some(r),
            () = teardown(&mut self.input) => None,
        };
        self.prov.writing = write;
        let Some(res) = res else { return };
        self.ctx.metrics.stage(Stage::Clone, started.elapsed());
        match res {
            Ok(from_golden) => {
                info!(from_golden, "vm cloned");
                self.prov.from_golden = from_golden;
                self.state.facts.cloned = true;
                self.state.view = ContainerView::waiting(WaitingReason::ContainerCreating, None);
            }
            Err(e) => self.failed(input, Failure::Image, &e),
        }
    }

    pub(super) async fn set(&mut self, input: &WorkerInput) {
        let tart = self.ctx.tart.clone();
        let vm = self.state.vm.clone();
        let started = Instant::now();
        let r = input.resources;
        let from_golden = self.prov.from_golden;
        let res = tokio::select! {
            r = alongside(async {
                // `--disk-size` must not shrink (docs/reference/tart-cli.md §2.3): only grow past
                // the image's disk.
                let disk = match r.disk_gb {
                    Some(want) => {
                        let have = tart.get(&vm).await?.disk_gb;
                        (u64::from(want) > have).then_some(want)
                    }
                    None => None,
                };
                let opts = SetOpts {
                    cpu: r.cpu,
                    memory_mib: r.memory_mib,
                    disk_size_gb: disk,
                    random_mac: true,
                    // Clones of one golden share its ECID; a Tart without the flag refuses it
                    // as a usage error, and the VM keeps the serial it has.
                    random_serial: from_golden,
                };
                match tart.set(&vm, &opts).await {
                    Err(e) if opts.random_serial && e.kind() == tart::ErrorKind::Usage => {
                        warn!(error = %e, "tart set refused --random-serial; keeping the clone's serial");
                        tart.set(&vm, &SetOpts { random_serial: false, ..opts }).await
                    }
                    r => r,
                }
            }, || start(&mut self.prov.writing)) => r,
            () = teardown(&mut self.input) => return,
        };
        self.ctx.metrics.stage(Stage::Set, started.elapsed());
        match res {
            Ok(()) => {
                self.state.facts.configured = true;
                // Kubelet's `Created` comes once the container exists as configured: the
                // guest's inputs were resolved before the clone, `tart set` is the last step.
                let occ = Occurrence::Created {
                    container: input.container.clone(),
                };
                self.emit(input, 0, occ);
            }
            Err(e) => self.config_refused(input, &e),
        }
    }
}

/// Where a Pod's VM is cloned from: the golden base of its image's `digest` (made now if this
/// Mac has none), or `None` to clone from the image itself — when the digest is not known (the
/// image is not in the cache under its tag) or the golden cannot be made. Either way the Pod
/// gets the same image; the golden only saves the copy.
async fn clone_source<T: Tart>(
    ctx: &WorkerContext<T>,
    image: &ImageRef,
    digest: Option<String>,
    creds: Option<tart::Credentials>,
) -> Option<String> {
    let digest = digest?;
    let source = pinned(image, &digest);
    match ctx
        .goldens
        .ensure(ctx.tart.clone(), &source, &digest, creds)
        .await
    {
        Ok((golden, result)) => {
            ctx.image_metrics.golden(result);
            Some(golden.as_str().to_owned())
        }
        Err(failure) => {
            ctx.image_metrics.golden(GoldenResult::Error);
            warn!(kind = failure.kind.as_str(), message = %failure.message, "no golden base; cloning from the image");
            None
        }
    }
}
