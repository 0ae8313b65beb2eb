//! The [`Tart`] trait: the seam between the agent and Tart, one method per `tart` operation.
//! Its implementations are `TartCli` (`cli.rs`) and, with the `testing` feature, `MemTart`
//! (`testing.rs`); the types it speaks in are in `model.rs` and `error.rs`.

use std::{future::Future, net::Ipv4Addr, time::Duration};

use crate::{
    Credentials, ExecOpts, ExecOutput, ExecSession, IpResolver, PruneOpts, Result, RunOpts,
    RunningVm, SetOpts, StopOutcome, Version, VmDetails, VmInfo, VmName,
};

/// The seam between the agent and Tart: one method per `tart` operation.
///
/// Every call runs under a deadline (see [`Deadlines`](crate::Deadlines)); retryable failures
/// are killed and retried inside the implementation (see [`RetryPolicy`](crate::RetryPolicy)),
/// so an `Err` returned here is final for this call. Implementations: `TartCli` (real `tart`
/// or `fake-tart`) and, with the `testing` feature, `testing::MemTart`.
pub trait Tart: Send + Sync + 'static {
    /// Handle to a started `tart run` process.
    type Vm: RunningVm;

    /// `tart --version`.
    fn version(&self) -> impl Future<Output = Result<Version>> + Send;
    /// `tart list --format json` (local VMs and OCI cache entries).
    fn list(&self) -> impl Future<Output = Result<Vec<VmInfo>>> + Send;
    /// `tart get <vm> --format json`.
    fn get(&self, vm: &VmName) -> impl Future<Output = Result<VmDetails>> + Send;
    /// `tart pull <image>`, with a stall watchdog; credentials go through the environment.
    fn pull(
        &self,
        image: &str,
        creds: Option<&Credentials>,
    ) -> impl Future<Output = Result<()>> + Send;
    /// `tart clone <source> <vm>`; pulls first if `source` is remote and not cached.
    fn clone_vm(
        &self,
        source: &str,
        vm: &VmName,
        creds: Option<&Credentials>,
    ) -> impl Future<Output = Result<()>> + Send;
    /// `tart set <vm> ...`.
    fn set(&self, vm: &VmName, opts: &SetOpts) -> impl Future<Output = Result<()>> + Send;
    /// `tart run <vm> ...`, detached in its own session, output to `opts.log_path`.
    /// Returns once the start window passed without an early exit.
    fn run(&self, vm: &VmName, opts: &RunOpts) -> impl Future<Output = Result<Self::Vm>> + Send;
    /// Re-attach to a VM whose `tart run` process is alive (found by the `config.json`
    /// lock, not by `tart ip`). `Ok(None)` when it is not running.
    fn attach(
        &self,
        vm: &VmName,
        opts: &RunOpts,
    ) -> impl Future<Output = Result<Option<Self::Vm>>> + Send;
    /// `tart ip <vm> --wait <wait> --resolver <resolver>`.
    fn ip(
        &self,
        vm: &VmName,
        wait: Duration,
        resolver: IpResolver,
    ) -> impl Future<Output = Result<Ipv4Addr>> + Send;
    /// Graceful stop: SIGUSR2 to the run process, wait up to `grace`, `tart stop --timeout
    /// <rest>`, then SIGKILL. Says how it ended.
    fn stop(
        &self,
        vm: &Self::Vm,
        grace: Duration,
    ) -> impl Future<Output = Result<StopOutcome>> + Send;
    /// `tart delete <vm>`. A VM that does not exist counts as deleted.
    fn delete(&self, vm: &VmName) -> impl Future<Output = Result<()>> + Send;
    /// `tart delete <remote name>`: remove one OCI cache entry (a tag or a digest); a missing
    /// one is `Ok`.
    fn delete_image(&self, image: &str) -> impl Future<Output = Result<()>> + Send;
    /// `tart exec <vm> <argv...>` with a deadline.
    fn exec(
        &self,
        vm: &VmName,
        argv: &[String],
        deadline: Duration,
    ) -> impl Future<Output = Result<ExecOutput>> + Send;
    /// `tart exec [-i] [-t] <vm> <argv...>` as a streaming session: the caller pumps its pipes
    /// and awaits its exit code; dropping the session kills the command's process group. No
    /// deadline of its own (an interactive command may run for hours): the caller bounds it.
    /// Never retried.
    fn exec_streaming(
        &self,
        vm: &VmName,
        argv: &[String],
        opts: ExecOpts,
    ) -> impl Future<Output = Result<ExecSession>> + Send;
    /// `tart prune ...`.
    fn prune(&self, opts: &PruneOpts) -> impl Future<Output = Result<()>> + Send;
    /// The manifest digest (`sha256:<hex>`) the cached tag `host/repository:tag` points at,
    /// read from the OCI cache's tag symlink (docs/reference/tart-cli.md §1.1); `None` when not
    /// cached or unreadable. Runs no `tart` process. For a Pod's `imageID`.
    fn cached_digest(
        &self,
        host: &str,
        repository: &str,
        tag: &str,
    ) -> impl Future<Output = Option<String>> + Send;
}
