//! End-to-end: Pods bound to the agent's node become fake-tart VMs, on the real control plane,
//! with the agent under least-privilege RBAC.
//!
//! Run: `cargo test -p tart-kubelet-tests --test e2e pod_lifecycle:: -- --nocapture`

use crate::pod_support;

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;

use pod_support::{Env, WAIT, in_order, phase, ready, waiting_reason};
use tart_kubelet_tests::{
    cluster::wait_for,
    fake::{Knobs, Rule, VmKnob},
};

fn knobs() -> Knobs {
    Knobs::new().with_latency_scale(0.001)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_reaches_running_one_of_one_with_ip_and_kubelet_events_in_order() {
    let mut env = Env::new("running", knobs(), &[]).await;
    env.start_agent();
    let t0 = std::time::Instant::now();
    let pod = env.create(&env.pod("vm-1")).await;
    let p = env
        .wait_pod("vm-1", "Running and ready", |p| {
            phase(p) == "Running" && ready(p)
        })
        .await;
    eprintln!(
        "figure: create -> Running 1/1 in {:?}; provision_delay_sum={:?} boot_sum={:?}",
        t0.elapsed(),
        env.metric("tart_kubelet_pod_provision_delay_seconds_sum")
            .await,
        env.metric("tart_kubelet_vm_boot_duration_seconds_sum")
            .await
    );
    let st = p.status.unwrap();
    assert!(
        st.pod_ip.as_deref().is_some_and(|ip| !ip.is_empty()),
        "no podIP"
    );
    assert!(st.host_ip.is_some(), "no hostIP");
    let cs = &st.container_statuses.unwrap()[0];
    assert_eq!(
        cs.container_id.as_deref(),
        Some(format!("tart://{}", Env::vm_of(&pod)).as_str())
    );
    assert!(cs.state.as_ref().unwrap().running.is_some());
    // imageID: the digest the cached tag points at, as containerd reports it.
    let (repo, _tag) = cs.image.rsplit_once(':').unwrap();
    let id = cs.image_id.strip_prefix(&format!("{repo}@sha256:"));
    assert!(
        id.is_some_and(|hex| hex.len() == 64),
        "imageID {:?} for image {:?}",
        cs.image_id,
        cs.image
    );
    let conds = st.conditions.unwrap();
    for c in ["PodScheduled", "Initialized", "ContainersReady", "Ready"] {
        assert!(
            conds.iter().any(|x| x.type_ == c && x.status == "True"),
            "condition {c} not True: {conds:?}"
        );
    }
    let evs = env.wait_event("vm-1", "Started").await;
    assert!(
        in_order(
            &evs,
            &["CreatingVM", "Pulling", "Pulled", "Created", "Started"]
        ),
        "events out of order: {evs:?}"
    );
    // Once per occurrence, not once per reconcile: a fresh Pod pulls, creates and starts once.
    let counts = env.event_counts("vm-1").await;
    for r in ["CreatingVM", "Pulling", "Pulled", "Created", "Started"] {
        assert_eq!(
            counts.get(r),
            Some(&1),
            "{r} reported other than once: {counts:?}"
        );
    }
    assert!(
        env.home.is_running(&Env::vm_of(&pod)),
        "no tart run process holds the VM"
    );
    // Our finalizer is on the Pod.
    let p = env.pods().get("vm-1").await.unwrap();
    assert!(
        p.metadata
            .finalizers
            .unwrap_or_default()
            .contains(&"tart.run/vm".to_string())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hung_clone_is_killed_and_retried_and_each_histogram_counts_the_pod_once() {
    let k = knobs().with_rule(Rule::hang("clone").times(1));
    let args = ["--tart-deadline", "clone=3s", "--pull-stall-window", "3s"];
    let mut env = Env::new("hungclone", k, &args).await;
    env.start_agent();
    env.create(&env.pod("vm-1")).await;
    env.wait_pod("vm-1", "Running after a killed clone", |p| {
        phase(p) == "Running" && ready(p)
    })
    .await;
    let kills = env
        .metric("tart_kubelet_tart_kills_total{command=\"clone\"}")
        .await;
    assert!(
        kills.is_some_and(|k| k >= 1.0),
        "clone not killed: {kills:?}"
    );
    let retries = env
        .metric("tart_kubelet_tart_retries_total{command=\"clone\"}")
        .await;
    assert!(
        retries.is_some_and(|k| k >= 1.0),
        "clone not retried: {retries:?}"
    );
    assert_eq!(
        env.metric("tart_kubelet_pod_provision_delay_seconds_count")
            .await,
        Some(1.0)
    );
    assert_eq!(
        env.metric("tart_kubelet_vm_boot_duration_seconds_count")
            .await,
        Some(1.0)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn third_pod_waits_pending_for_a_slot_and_starts_when_one_is_deleted() {
    let mut env = Env::new("slots", knobs(), &["--vm-slots", "2"]).await;
    env.start_agent();
    for n in ["a", "b"] {
        env.create(&env.pod(n)).await;
    }
    for n in ["a", "b"] {
        env.wait_pod(n, "Running", |p| phase(p) == "Running" && ready(p))
            .await;
    }
    env.create(&env.pod("c")).await;
    let c = env
        .wait_pod("c", "waiting for a slot", |p| {
            waiting_reason(p).as_deref() == Some("WaitingForVMSlot")
        })
        .await;
    assert_eq!(phase(&c), "Pending");
    let evs = env.wait_event("c", "WaitingForVMSlot").await;
    assert!(
        evs.iter()
            .any(|(t, r, _)| t == "Normal" && r == "WaitingForVMSlot")
    );
    // The waiting Pod shows in the pending-age gauge, the two VMs in the running gauge.
    let gauges = wait_for(WAIT, || async {
        let pending = env
            .metric("tart_kubelet_pods_pending{age=\"lt_1m\"}")
            .await?;
        let running = env.metric("tart_kubelet_vms{state=\"running\"}").await?;
        (pending >= 1.0 && running == 2.0).then_some(())
    })
    .await;
    assert!(gauges.is_ok(), "gauges: {}", env.metrics().await);
    env.delete("a", 5).await;
    env.wait_gone("a").await;
    env.wait_pod("c", "Running after a slot freed", |p| {
        phase(p) == "Running" && ready(p)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_delete_stops_and_deletes_the_vm_and_leaves_nothing_behind() {
    let mut env = Env::new("delete", knobs(), &[]).await;
    env.start_agent();
    let pod = env.create(&env.pod("vm-1")).await;
    env.wait_pod("vm-1", "Running", |p| phase(p) == "Running" && ready(p))
        .await;
    let vm = Env::vm_of(&pod);
    let pid = env.home.run_pid(&vm).expect("run process");
    env.delete("vm-1", 20).await;
    env.wait_gone("vm-1").await;
    assert!(!env.home.vm_exists(&vm), "VM still exists");
    assert!(!env.home.is_running(&vm), "VM still running");
    let gone = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_err();
    assert!(gone, "tart run process {pid} still alive");
    let log = std::fs::read_to_string(&env.log_path).unwrap_or_default();
    assert!(
        log.contains("guest_shutdown"),
        "the guest was not asked to shut down:\n{}",
        env.agent_log()
    );
    assert!(env.vms().is_empty(), "VMs left: {:?}", env.vms());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guest_exit_zero_under_restart_never_is_succeeded_completed() {
    let k = knobs().with_vm("*", VmKnob::default().exits_after(3000, 0));
    let mut env = Env::new("completed", k, &[]).await;
    env.start_agent();
    let mut pod = env.pod("job");
    pod.spec.as_mut().unwrap().restart_policy = Some("Never".into());
    env.create(&pod).await;
    let p = env
        .wait_pod("job", "Succeeded", |p| phase(p) == "Succeeded")
        .await;
    let cs = &p.status.unwrap().container_statuses.unwrap()[0];
    let t = cs
        .state
        .as_ref()
        .unwrap()
        .terminated
        .as_ref()
        .expect("terminated");
    assert_eq!(t.exit_code, 0);
    assert_eq!(t.reason.as_deref(), Some("Completed"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_sigkill_and_restart_adopts_running_vms_and_finishes_the_provisioning_one() {
    let mut env = Env::new(
        "restart",
        knobs().with_max_running_vms(3),
        &["--vm-slots", "3"],
    )
    .await;
    env.start_agent();
    let a = env.create(&env.pod("a")).await;
    let b = env.create(&env.pod("b")).await;
    for n in ["a", "b"] {
        env.wait_pod(n, "Running", |p| phase(p) == "Running" && ready(p))
            .await;
    }
    let pids: Vec<i32> = [&a, &b]
        .iter()
        .map(|p| env.home.run_pid(&Env::vm_of(p)).expect("running"))
        .collect();
    let started_at = |p: &Pod| {
        let s = p.status.as_ref()?.container_statuses.as_ref()?.first()?;
        Some(s.state.as_ref()?.running.as_ref()?.started_at.clone()?.0)
    };
    let mut started = vec![];
    for n in ["a", "b"] {
        let p = env.pods().get(n).await.expect("get pod");
        started.push(started_at(&p).expect("a running Pod has startedAt"));
    }
    // The third Pod's clone takes 15 s: kill the agent while it provisions.
    env.home
        .set_knobs(
            &knobs()
                .with_max_running_vms(3)
                .with_rule(Rule::delay("clone", 15_000).times(1)),
        )
        .expect("knobs");
    let c = env.create(&env.pod("c")).await;
    env.wait_event("c", "Pulled").await;
    env.kill_agent().await;
    env.start_agent();
    env.wait_pod("c", "Running after the restart", |p| {
        phase(p) == "Running" && ready(p)
    })
    .await;
    for (p, pid) in [&a, &b].iter().zip(&pids) {
        assert_eq!(
            env.home.run_pid(&Env::vm_of(p)),
            Some(*pid),
            "VM of {} was restarted",
            p.metadata.name.as_deref().unwrap_or_default()
        );
    }
    // An adopted VM did not restart: its Pod keeps the start time it had.
    for (n, was) in ["a", "b"].iter().zip(&started) {
        let p = env.pods().get(n).await.expect("get pod");
        assert_eq!(started_at(&p).as_ref(), Some(was), "startedAt of {n} moved");
    }
    let mut vms = env.vms();
    vms.sort();
    let mut want: Vec<String> = [&a, &b, &c].iter().map(|p| Env::vm_of(p)).collect();
    want.sort();
    assert_eq!(vms, want, "orphan or duplicate VMs");
    // The new process observed only the provisioning Pod.
    let r = wait_for(Duration::from_secs(20), || async {
        let v = env
            .metric("tart_kubelet_pod_provision_delay_seconds_count")
            .await?;
        Some(v)
    })
    .await;
    assert_eq!(r.ok(), Some(1.0));
    assert_eq!(
        env.metric("tart_kubelet_vm_boot_duration_seconds_count")
            .await,
        Some(1.0)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_up_deletes_our_orphan_vms_and_never_touches_foreign_ones() {
    let mut env = Env::new("orphans", knobs(), &[]).await;
    let orphan = "tkl-0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9";
    let lookalike = "tkl-0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9-copy";
    for vm in [orphan, lookalike, "macos-base"] {
        env.home.create_vm(vm).expect("create vm");
    }
    env.start_agent();
    let r = wait_for(WAIT, || async {
        (!env.home.vm_exists(orphan)).then_some(())
    })
    .await;
    assert!(r.is_ok(), "orphan not deleted\n{}", env.agent_log());
    assert!(
        env.home.vm_exists(lookalike),
        "a VM that is not ours was deleted"
    );
    assert!(env.home.vm_exists("macos-base"), "a foreign VM was deleted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_stops_the_agent_quickly_and_leaves_the_vm_running() {
    let mut env = Env::new("sigterm", knobs(), &[]).await;
    env.start_agent();
    let pod = env.create(&env.pod("vm-1")).await;
    env.wait_pod("vm-1", "Running", |p| phase(p) == "Running" && ready(p))
        .await;
    let vm = Env::vm_of(&pod);
    let pid = env.home.run_pid(&vm).expect("running");
    let t0 = std::time::Instant::now();
    assert!(
        env.sigterm_agent(Duration::from_secs(15)).await,
        "agent did not exit on SIGTERM\n{}",
        env.agent_log()
    );
    eprintln!("figure: SIGTERM -> exit in {:?}", t0.elapsed());
    assert_eq!(
        env.home.run_pid(&vm),
        Some(pid),
        "the VM did not outlive the agent"
    );
}
