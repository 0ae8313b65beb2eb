//! Keeping a running guest's volumes current: Secret and ConfigMap volume files follow their
//! objects, downward API files follow the Pod as it was at start, and service-account tokens
//! are refreshed at 80 % of their life (or after `--token-refresh-max`). One task per running
//! VM; dropping its [`RefreshTask`] stops it. The files are the guest contract's
//! ([`crate::guest_contract::prepare::refresh_volumes`]); this task times the refreshes and
//! reports them as the Pod's events and metrics.
//!
//! Each file set is swapped atomically (`atomic`), so a reader in the guest sees the
//! old set or the new one, never a mix. A failure keeps the files in place (a token that could
//! not be refreshed stays until it expires), is a `FailedMount` Warning once per streak of
//! failures and a `guest_volume_updates_total{outcome="error"}`, and never stops the task.

use std::{sync::Arc, time::Duration};

use k8s_openapi::{
    api::core::v1::{ObjectReference, Pod},
    jiff::Timestamp,
};
use tart::VmName;
use tokio::task::AbortHandle;
use tracing::{Instrument, info, info_span, warn};

use crate::{
    guest_contract::{
        model::ConfigError,
        prepare::{GuestSettings, NodeAllocatable, Tokens, next_token_refresh, refresh_volumes},
        token::retry_delay,
    },
    metrics::OutcomeLabels,
    pods::{events::Occurrence, metrics::PodMetrics, sink::EventSink},
};

/// How often Secret and ConfigMap volumes are compared with their objects.
pub(crate) const REFRESH_PERIOD: Duration = Duration::from_secs(30);

/// The shortest wait between two refreshes, so a token due now cannot make the task spin.
const MIN_WAIT: Duration = Duration::from_secs(1);

/// What a refresher reads and reports to.
#[derive(Clone)]
pub(crate) struct RefreshDeps {
    /// API client.
    pub client: kube::Client,
    /// Guest settings (layout, timeouts, token refresh cap).
    pub settings: GuestSettings,
    /// Node allocatable at start (for `resourceFieldRef` files).
    pub alloc: NodeAllocatable,
    pub events: EventSink,
    pub metrics: PodMetrics,
}

/// A running refresher; dropping it stops the task.
#[derive(Debug)]
pub(crate) struct RefreshTask(AbortHandle);

impl Drop for RefreshTask {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Start keeping `vm`'s volumes current for `pod`. `tokens`: those issued while preparing
/// just now, so the first refresh waits its period; `None` when they are not known (a VM
/// adopted after an agent restart, or run again without preparing): the files are refreshed
/// and the tokens issued again at once.
pub(crate) fn spawn(
    deps: RefreshDeps,
    pod: Arc<Pod>,
    vm: VmName,
    tokens: Option<Tokens>,
) -> RefreshTask {
    let span = info_span!("guest_refresh", %vm);
    let task = tokio::spawn(run(deps, pod, vm, tokens).instrument(span));
    RefreshTask(task.abort_handle())
}

/// How long to wait before the next refresh: the period, or less when a token is due sooner.
pub(crate) fn next_wait(now: Timestamp, token_due: Option<Timestamp>) -> Duration {
    let until_token = token_due
        .map(|t| t.duration_since(now))
        .and_then(|d| Duration::try_from(d).ok());
    match until_token {
        Some(d) => d.clamp(MIN_WAIT, REFRESH_PERIOD),
        // Due already (negative span) or no token.
        None if token_due.is_some() => MIN_WAIT,
        None => REFRESH_PERIOD,
    }
}

async fn run(deps: RefreshDeps, pod: Arc<Pod>, vm: VmName, tokens: Option<Tokens>) {
    let obj = object_ref(&pod);
    let uid = obj.uid.clone().unwrap_or_default();
    let mut streak = 0u32;
    let mut episodes = 0u32;
    let mut first = tokens.is_none();
    let mut tokens = tokens.unwrap_or_default();
    loop {
        let due = next_token_refresh(&tokens, deps.settings.token_refresh_max);
        let wait = if first {
            Duration::ZERO
        } else if streak > 0 {
            // After a failure: API_RETRY's curve, never later than the period.
            retry_delay(streak).clamp(MIN_WAIT, REFRESH_PERIOD)
        } else {
            next_wait(Timestamp::now(), due)
        };
        first = false;
        tokio::time::sleep(wait).await;
        let res = refresh_volumes(
            &deps.client,
            &deps.settings,
            &pod,
            deps.alloc,
            &vm,
            &mut tokens,
        )
        .await;
        let problems: Vec<(String, ConfigError)> = match res {
            Ok(r) => {
                if r.changed {
                    info!("guest volumes updated");
                    count(&deps.metrics, "updated");
                }
                r.stale_tokens
            }
            Err(e) => vec![(volume_names(&pod), e)],
        };
        if problems.is_empty() {
            streak = 0;
            continue;
        }
        if streak == 0 {
            episodes += 1;
        }
        streak += 1;
        for (volume, e) in problems {
            count(&deps.metrics, "error");
            warn!(%volume, error = %e, "guest volume update failed; the files in place stay");
            let occ = Occurrence::VolumeUpdateFailed {
                volume,
                error: e.to_string(),
            };
            deps.events.emit(&uid, &obj, episodes, occ);
        }
    }
}

fn count(m: &PodMetrics, outcome: &'static str) {
    m.guest_volume_updates
        .get_or_create(&OutcomeLabels { outcome })
        .inc();
}

fn object_ref(pod: &Pod) -> ObjectReference {
    use kube::Resource;
    pod.object_ref(&())
}

/// The names of the Pod's volumes the agent keeps current, for a failure not tied to one.
fn volume_names(pod: &Pod) -> String {
    pod.spec
        .as_ref()
        .and_then(|s| s.volumes.as_ref())
        .map(|v| {
            v.iter()
                .filter(|v| {
                    v.secret.is_some()
                        || v.config_map.is_some()
                        || v.projected.is_some()
                        || v.downward_api.is_some()
                })
                .map(|v| v.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests;
