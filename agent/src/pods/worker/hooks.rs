//! The worker's side of `postStart`: it runs once the guest has an IP, before the container
//! counts as started or ready and before probes begin. Its failure is kubelet's: a Warning
//! `FailedPostStartHook`, the run stopped (Normal `Killing`: `FailedPostStartHook`), and the plan
//! restarts it under any policy but `Never`. The hook runner is [`crate::lifecycle::hooks`].

use std::time::Duration;

use tart::{RunningVm, Tart};
use tracing::{info, warn};

use super::{Worker, WorkerInput};
use crate::lifecycle::hooks::{
    HookKind, HookRunner, hook,
    model::{HookAction, failure_message},
    run,
};
use crate::pods::{ending::AgentStop, events::Occurrence};

/// The longest a `postStart` hook may run (kubelet sets none; every external call here has
/// one). Past it the hook has failed.
pub(super) const POST_START_LIMIT: Duration = Duration::from_secs(600);

impl<T: Tart> Worker<T> {
    /// Run the `postStart` hook of this run.
    pub(super) async fn post_start(&mut self, input: &WorkerInput) {
        let action = container_hook(input, HookKind::PostStart);
        let (Some(action), Some(proc)) = (action, self.proc()) else {
            self.state.facts.post_started = true;
            self.start_probing(input);
            return;
        };
        info!(hook = HookKind::PostStart.as_str(), "running the hook");
        let res = tokio::select! {
            r = self.run_hook(input, action, POST_START_LIMIT) => r,
            info = proc.wait() => {
                self.on_exit(info);
                return;
            }
            () = super::teardown(&mut self.input) => return,
        };
        match res {
            Ok(()) => {
                info!("postStart hook done");
                self.state.facts.post_started = true;
                self.start_probing(input);
            }
            Err(msg) => {
                warn!(message = %msg, "postStart hook failed; stopping the vm");
                // It has run: a VM slow to exit is waited for, not hooked again.
                self.state.facts.post_started = true;
                self.hook_kill(input, msg).await;
            }
        }
    }

    /// Run the hook `action` against this run's guest within `limit`; a failure comes back as
    /// kubelet's message for it. The future holds its own copies, so the worker stays free for
    /// the `select!` that races it against the VM's exit.
    pub(super) fn run_hook(
        &self,
        input: &WorkerInput,
        action: HookAction,
        limit: Duration,
    ) -> impl Future<Output = Result<(), String>> + use<T> {
        let tart = self.ctx.tart.clone();
        let vm = self.state.vm.clone();
        let ip = self.state.pod_ip;
        let (container, pod) = (input.container.clone(), input.pod_label.clone());
        async move {
            let runner = HookRunner {
                tart: &*tart,
                vm: &vm,
                ip,
            };
            run(&runner, &action, limit)
                .await
                .map_err(|f| failure_message(&action, &container, &pod, &f.error, &f.output))
        }
    }

    /// Stop the run whose `postStart` failed, within the Pod's grace; its terminated state is
    /// the agent's doing (the signal the job got, `Error`) with the hook's failure as its
    /// message.
    async fn hook_kill(&mut self, input: &WorkerInput, msg: String) {
        let n = self.state.facts.restarts;
        let hook = HookKind::PostStart;
        self.emit(input, n, Occurrence::HookFailed { hook });
        let message = hook.failed_reason().to_owned();
        self.emit(input, n, Occurrence::ProbeKilling { message });
        self.state.facts.agent_killed = true;
        let Some(proc) = self.proc() else {
            return;
        };
        let why = AgentStop::PostStart { message: msg };
        self.kill_run(proc, why, "a failed postStart hook", input.grace)
            .await;
    }
}

/// The `kind` hook of the Pod's container, if it declares one.
pub(super) fn container_hook(input: &WorkerInput, kind: HookKind) -> Option<HookAction> {
    let spec = input.pod.0.spec.as_ref()?;
    hook(spec.containers.first()?, kind)
}
