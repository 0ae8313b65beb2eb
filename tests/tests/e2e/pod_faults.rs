//! End-to-end: what goes wrong on the way from Pod to VM, on the real control plane with the
//! agent under least-privilege RBAC: host faults (VM limit, full disk, locked
//! auxiliary storage) are retried with a Warning and never fail the Pod; workload faults
//! (missing image, crashing guest, a Pod that cannot be a VM) get kubelet's reasons; hostile
//! Pod fields never pass through a shell.
//!
//! Run: `cargo test -p tart-kubelet-tests --test e2e pod_faults:: -- --nocapture`

use crate::pod_support;

use pod_support::{Env, WAIT, phase, ready, waiting_reason};
use tart_kubelet_tests::{
    cluster::wait_for,
    fake::{ImageKnob, Knobs, Rule, VmKnob},
};

fn knobs() -> Knobs {
    Knobs::new().with_latency_scale(0.001)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vm_limit_at_start_keeps_the_pod_pending_with_a_warning_and_it_is_retried() {
    let k = knobs().with_rule(Rule::vm_limit().times(1));
    let mut env = Env::new("vmlimit", k, &[]).await;
    env.start_agent();
    env.create(&env.pod("vm-1")).await;
    let evs = env.wait_event("vm-1", "VMLimitReached").await;
    let (t, _, note) = evs.iter().find(|(_, r, _)| r == "VMLimitReached").unwrap();
    assert_eq!(t, "Warning");
    assert!(note.contains("limit"), "{note}");
    // Never Failed on the way to Running.
    running_without_ever_failing(&env, "vm-1").await;
    assert!(
        env.metric("tart_kubelet_host_faults_total{kind=\"vm_limit\"}")
            .await
            .is_some_and(|v| v >= 1.0)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_container_pod_is_failed_with_a_clear_reason_and_the_agent_carries_on() {
    let mut env = Env::new("twoc", knobs(), &[]).await;
    env.start_agent();
    let mut pod = env.pod("two");
    let c = pod.spec.as_ref().unwrap().containers[0].clone();
    pod.spec
        .as_mut()
        .unwrap()
        .containers
        .push(k8s_openapi::api::core::v1::Container {
            name: "second".into(),
            ..c
        });
    env.create(&pod).await;
    let p = env
        .wait_pod("two", "Failed", |p| phase(p) == "Failed")
        .await;
    let st = p.status.unwrap();
    assert_eq!(st.reason.as_deref(), Some("UnsupportedContainerCount"));
    assert!(
        st.message
            .unwrap_or_default()
            .contains("exactly one container")
    );
    let evs = env.wait_event("two", "UnsupportedContainerCount").await;
    assert!(
        evs.iter()
            .any(|(t, r, _)| t == "Warning" && r == "UnsupportedContainerCount")
    );
    env.create(&env.pod("one")).await;
    env.wait_pod("one", "Running", |p| phase(p) == "Running" && ready(p))
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_pull_secret_reaches_tart_environment_verbatim_without_a_shell() {
    let marker = std::env::temp_dir().join(format!("pwned-{}", rand::random::<u32>()));
    let password = format!(
        "p$(touch {});`touch {}` \"q'\nx",
        marker.display(),
        marker.display()
    );
    let image = "registry.example.com/ci/macos:1";
    let k = knobs().with_image(
        image,
        ImageKnob::sized(1.0, 20).with_auth("u;$(id)", &password),
    );
    let mut env = Env::new("hostile", k, &[]).await;
    let cfg = serde_json::json!({"auths": {"registry.example.com": {"username": "u;$(id)", "password": password}}});
    env.create_secret("regcred", cfg.to_string().as_bytes())
        .await;
    env.start_agent();
    let mut pod = env.pod("vm-1");
    let spec = pod.spec.as_mut().unwrap();
    spec.containers[0].image = Some(image.into());
    spec.image_pull_secrets = Some(vec![k8s_openapi::api::core::v1::LocalObjectReference {
        name: "regcred".into(),
    }]);
    env.create(&pod).await;
    env.wait_pod("vm-1", "Running with registry auth", |p| {
        phase(p) == "Running" && ready(p)
    })
    .await;
    assert!(!marker.exists(), "a shell ran the password");
    let log = std::fs::read_to_string(&env.log_path).unwrap_or_default();
    assert!(!log.contains("touch"), "the password reached the agent log");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_image_is_err_image_pull_and_the_pod_stays_pending() {
    let image = "ghcr.io/nobody/missing:1";
    let k = knobs().with_image(image, ImageKnob::missing());
    let mut env = Env::new("missing", k, &[]).await;
    env.start_agent();
    let mut pod = env.pod("vm-1");
    pod.spec.as_mut().unwrap().containers[0].image = Some(image.into());
    env.create(&pod).await;
    let p = env
        .wait_pod("vm-1", "ErrImagePull or ImagePullBackOff", |p| {
            matches!(
                waiting_reason(p).as_deref(),
                Some("ErrImagePull" | "ImagePullBackOff")
            )
        })
        .await;
    assert_eq!(phase(&p), "Pending");
    let evs = env.wait_event("vm-1", "Failed").await;
    let (t, _, note) = evs.iter().find(|(_, r, _)| r == "Failed").unwrap();
    assert_eq!(t, "Warning");
    assert!(note.contains("Failed to pull image"), "{note}");
    assert!(
        env.metric("tart_kubelet_host_faults_total{kind=\"vm_limit\"}")
            .await
            .is_some_and(|v| v == 0.0),
        "a workload fault counted as a host fault"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashing_guest_under_always_is_restarted_with_restart_count_and_backoff() {
    // Exit after 3 s (3_000_000 ms × latency scale 0.001): past the 1 s start window, so it is
    // a crash of a running VM, not a failed start.
    let k = knobs().with_vm("*", VmKnob::default().exits_after(3_000_000, 3));
    let mut env = Env::new("crashloop", k, &["--run-start-window", "1s"]).await;
    env.start_agent();
    env.create(&env.pod("vm-1")).await;
    let p = env
        .wait_pod("vm-1", "restarted once", |p| {
            p.status
                .as_ref()
                .and_then(|s| s.container_statuses.as_ref())
                .is_some_and(|c| c[0].restart_count >= 1)
        })
        .await;
    assert_eq!(phase(&p), "Running", "a restarting Pod stays Running");
    let cs = &p.status.unwrap().container_statuses.unwrap()[0];
    let last = cs.last_state.as_ref().and_then(|l| l.terminated.as_ref());
    assert_eq!(last.map(|t| t.exit_code), Some(3));
    assert_eq!(last.and_then(|t| t.reason.as_deref()), Some("Error"));
    let evs = env.wait_event("vm-1", "BackOff").await;
    assert!(evs.iter().any(|(t, r, _)| t == "Warning" && r == "BackOff"));
    // The restart runs the VM again (running after a restart), and the histograms still
    // count the Pod once. (Repeated Started events become one event series, so count states.)
    env.wait_pod("vm-1", "running again after a restart", |p| {
        p.status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .is_some_and(|c| {
                c[0].restart_count >= 1 && c[0].state.as_ref().is_some_and(|s| s.running.is_some())
            })
    })
    .await;
    assert_eq!(
        env.metric("tart_kubelet_pod_provision_delay_seconds_count")
            .await,
        Some(1.0)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_image_string_never_reaches_tart_and_fails_as_invalid_image_name() {
    let marker = std::env::temp_dir().join(format!("pwned-{}", rand::random::<u32>()));
    let mut env = Env::new("badimage", knobs(), &[]).await;
    env.start_agent();
    let mut pod = env.pod("vm-1");
    pod.spec.as_mut().unwrap().containers[0].image = Some(format!(
        "ghcr.io/a/b:1;$(touch {m})`touch {m}`'\"",
        m = marker.display()
    ));
    env.create(&pod).await;
    let p = env
        .wait_pod("vm-1", "Failed", |p| phase(p) == "Failed")
        .await;
    assert_eq!(
        p.status.and_then(|s| s.reason).as_deref(),
        Some("InvalidImageName")
    );
    assert!(!marker.exists(), "a shell ran the image string");
    assert!(
        env.vms().is_empty(),
        "a VM was made from it: {:?}",
        env.vms()
    );
}

/// A host fault on the way to Running: Pending with a Warning `reason`, retried, never Failed.
/// Waits until Pod `name` is Running and ready, asserting at every poll that a host fault
/// never made it Failed on the way.
async fn running_without_ever_failing(env: &Env, name: &str) {
    let api = env.pods();
    let r = wait_for(WAIT, || {
        let api = api.clone();
        async move {
            let p = api.get(name).await.ok()?;
            assert_ne!(
                phase(&p),
                "Failed",
                "host fault failed the Pod: {:?}",
                p.status
            );
            (phase(&p) == "Running" && ready(&p)).then_some(())
        }
    })
    .await;
    assert!(
        r.is_ok(),
        "not retried to Running: {r:?}\n{}",
        env.agent_log()
    );
}

async fn host_fault_is_retried_to_running(label: &str, rule: Rule, reason: &str, kind: &str) {
    let mut env = Env::new(label, knobs().with_rule(rule.times(1)), &[]).await;
    env.start_agent();
    env.create(&env.pod("vm-1")).await;
    let evs = env.wait_event("vm-1", reason).await;
    assert!(
        evs.iter().any(|(t, r, _)| t == "Warning" && r == reason),
        "{evs:?}"
    );
    running_without_ever_failing(&env, "vm-1").await;
    let series = format!("tart_kubelet_host_faults_total{{kind=\"{kind}\"}}");
    assert_eq!(env.metric(&series).await, Some(1.0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_during_pull_is_a_host_fault_retried_to_running() {
    host_fault_is_retried_to_running(
        "nospace",
        Rule::no_space("pull"),
        "HostDiskFull",
        "no_space",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_locked_auxiliary_storage_at_run_is_a_host_fault_retried_to_running() {
    host_fault_is_retried_to_running(
        "auxlock",
        Rule::aux_storage_locked(),
        "AuxiliaryStorageLocked",
        "aux_storage_locked",
    )
    .await;
}

/// An agent SIGKILLed while a clone hangs leaves that clone (and what it started) running in
/// a process group of its own; a hung clone or pull would hold Tart's locks against every
/// later one. The next agent ends them before it runs tart, and the Pod still gets its VM.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_agent_kills_the_tart_commands_its_killed_predecessor_left_hung() {
    use tart_kubelet_tests::fake::processes_of_home;
    let mut env = Env::new(
        "orphans",
        knobs().with_rule(Rule::hang_with_child("clone").times(1)),
        &[],
    )
    .await;
    env.start_agent();
    env.create(&env.pod("vm-1")).await;
    let hung = wait_for(WAIT, || async {
        let p = processes_of_home(env.home.path());
        (p.len() == 2).then_some(p)
    })
    .await
    .unwrap_or_else(|e| panic!("no hung clone: {e}\n{}", env.agent_log()));
    env.kill_agent().await;
    let alive = |pids: &[i32]| {
        pids.iter()
            .filter(|p| std::path::Path::new(&format!("/proc/{p}/environ")).exists())
            .count()
    };
    assert_eq!(
        alive(&hung),
        2,
        "the hung clone died with its agent: nothing to test"
    );
    env.start_agent();
    let gone = wait_for(WAIT, || async {
        let left: Vec<i32> = processes_of_home(env.home.path())
            .into_iter()
            .filter(|p| hung.contains(p))
            .collect();
        left.is_empty().then_some(())
    })
    .await;
    assert!(
        gone.is_ok(),
        "orphaned clone {hung:?} still running\n{}",
        env.agent_log()
    );
    assert!(
        env.agent_log()
            .contains("killed tart commands a previous agent left running"),
        "{}",
        env.agent_log()
    );
    running_without_ever_failing(&env, "vm-1").await;
}
