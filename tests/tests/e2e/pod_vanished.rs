//! End-to-end: under the shipped `packaging/kubernetes/rbac.yaml`, the workers of Pods that
//! vanished without a reconcile (a finished Pod deleted after its finalizer went, a
//! force-deleted one) are torn down within seconds, from the Pod watch's cache, and the agent
//! is never refused a request (no 403 in the API server's audit log).
//!
//! Run: `cargo test -p tart-kubelet-tests --test e2e pod_vanished:: -- --nocapture`

use crate::pod_support;

use std::time::Duration;

use kube::{ResourceExt, api::DeleteParams};
use pod_support::{Env, phase, ready};
use tart_kubelet_tests::{
    cluster::wait_for,
    fake::{Knobs, VmKnob},
};

/// Longer than the agent's housekeeping period (2 s) on a busy machine, well short of the
/// VM sweep's 60 s.
const TEARDOWN: Duration = Duration::from_secs(20);

/// The audit log's refused requests of `user`: "verb URI code" per request.
fn refused(audit: &str, user: &str) -> Vec<String> {
    audit
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["stage"] == "ResponseComplete" && v["user"]["username"] == user)
        .filter(|v| v["responseStatus"]["code"] == 403)
        .map(|v| format!("{} {} 403", v["verb"], v["requestURI"]))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vanished_pods_leave_no_worker_and_no_refused_request_under_the_shipped_rbac() {
    let exits = Knobs::new()
        .with_latency_scale(0.001)
        .with_vm("*", VmKnob::default().exits_after(1000, 0));
    let mut env = Env::new("vanished", exits, &[]).await;
    env.start_agent();

    // A finished Pod, deleted as a CI system deletes its finished runners.
    let mut job = env.pod("job");
    job.spec.as_mut().unwrap().restart_policy = Some("Never".into());
    let job = env.create(&job).await;
    env.wait_pod("job", "Succeeded", |p| phase(p) == "Succeeded")
        .await;
    env.delete("job", 30).await;
    env.wait_gone("job").await;

    // A running Pod, force-deleted.
    env.home
        .set_knobs(&Knobs::new().with_latency_scale(0.001))
        .expect("knobs");
    let run = env.create(&env.pod("run")).await;
    env.wait_pod("run", "Running", |p| phase(p) == "Running" && ready(p))
        .await;
    let force = DeleteParams::default().grace_period(0);
    env.pods().delete("run", &force).await.expect("delete");
    env.wait_gone("run").await;

    // Each worker is torn down (its log line names the Pod's UID) within seconds.
    let log_path = env.log_path.clone();
    let uids = [job.uid().unwrap(), run.uid().unwrap()];
    let torn = wait_for(TEARDOWN, || async {
        let log = std::fs::read_to_string(&log_path).unwrap_or_default();
        uids.iter()
            .all(|u| {
                log.lines()
                    .any(|l| l.contains("its worker is torn down") && l.contains(u.as_str()))
            })
            .then_some(())
    })
    .await;
    assert!(
        torn.is_ok(),
        "workers of {uids:?} not torn down within {TEARDOWN:?}\n{}",
        env.agent_log()
    );
    // Their VMs are gone too.
    let vms_gone = wait_for(TEARDOWN, || async { env.vms().is_empty().then_some(()) }).await;
    assert!(vms_gone.is_ok(), "VMs left: {:?}", env.vms());

    // Nothing the agent asked for was refused.
    let audit = std::fs::read_to_string(env.cp.run_dir().join("logs/audit.log"))
        .expect("the control plane's audit log");
    let user = format!("tart-kubelet-{}", env.node);
    assert!(
        audit.contains(&user),
        "the audit log records the agent's requests"
    );
    let denied = refused(&audit, &user);
    assert!(
        denied.is_empty(),
        "the agent was refused under the shipped RBAC:\n{}",
        denied.join("\n")
    );
}
