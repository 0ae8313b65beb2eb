//! End to end on the real control plane: where the guest launcher comes from
//! (docs/guest.md, "Which image do I need"). On a guest-agent-only image the agent delivers
//! the shipped launcher through `tart exec` and the job is served as on a baked image — logs,
//! exec, attach, probes — and survives an agent restart; on a vanilla image a Pod with a
//! command waits `GuestLauncherMissing` and never shows a running job; a Pod without a command
//! only wants the VM and runs as before; an image whose `sudo` wants a password waits
//! `GuestLauncherFailed`.

use crate::pod_support;

use std::time::Duration;

use k8s_openapi::api::core::v1::{ExecAction, Pod, Probe};
use pod_support::{Env, phase, ready, restart_count, terminated, waiting_message, waiting_reason};
use tart_kubelet_tests::{
    cluster::wait_for,
    fake::{GuestImage, Knobs, VmKnob},
};
use tokio::io::{AsyncBufReadExt, BufReader};

fn knobs(image: GuestImage) -> Knobs {
    Knobs::new().with_vm("*", VmKnob::default().guest_image(image))
}

/// `tick <n>` → n.
fn tick(line: &str) -> Option<u64> {
    line.trim().strip_prefix("tick ")?.parse().ok()
}

/// The highest tick in the Pod's log.
async fn last_tick(env: &Env, pod: &str) -> Option<u64> {
    let out = env.kubectl_command(&["logs", pod]).output().await.ok()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(tick)
        .max()
}

/// A job that ticks until the guest file `/tmp/stop` appears, then exits 7.
fn ticking_job(env: &Env, name: &str) -> Pod {
    let mut pod = env.shell_pod(
        name,
        "i=0; while [ ! -e \"$TART_GUEST_ROOT/tmp/stop\" ]; do echo \"tick $i\"; i=$((i+1)); sleep 0.2; done; exit 7",
    );
    let spec = pod.spec.as_mut().unwrap();
    spec.restart_policy = Some("Never".into());
    let c = &mut spec.containers[0];
    c.readiness_probe = Some(Probe {
        exec: Some(ExecAction {
            command: Some(vec![
                "/bin/sh".into(),
                "-c".into(),
                "test \"$USER\" = admin".into(),
            ]),
        }),
        period_seconds: Some(1),
        ..Default::default()
    });
    pod
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_agent_only_image_gets_the_launcher_delivered_and_its_job_outlives_an_agent_restart()
 {
    let (mut env, _) =
        Env::with_kubelet_api("launcher-agent", knobs(GuestImage::AgentOnly), &[]).await;
    env.create(&ticking_job(&env, "job")).await;
    let p = env
        .wait_pod("job", "Running and Ready", |p| {
            phase(p) == "Running" && ready(p)
        })
        .await;
    let vm = Env::vm_of(&p);
    let installed = env
        .home
        .vm_dir(&vm)
        .join("guest/usr/local/libexec/tart-guest/tart-guest-launcher");
    let shipped = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../packaging/guest/tart-guest-launcher"),
    )
    .unwrap();
    assert_eq!(
        std::fs::read(&installed).expect("the launcher was installed in the guest"),
        shipped,
        "the shipped launcher, byte for byte"
    );

    let series = "tart_kubelet_guest_launchers_total{outcome=\"delivered\"}";
    assert_eq!(env.metric(series).await, Some(1.0), "one delivery");

    // Logs.
    wait_for(Duration::from_secs(60), || async {
        (last_tick(&env, "job").await? >= 3).then_some(())
    })
    .await
    .unwrap_or_else(|_| panic!("the job's ticks never reached the log\n{}", env.agent_log()));

    // Exec: as the guest agent's user.
    let out = env
        .kubectl_command(&["exec", "job", "--", "printenv", "USER"])
        .output()
        .await
        .expect("kubectl exec");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "admin\n",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Attach: the job's next lines.
    let mut child = env
        .kubectl_command(&["attach", "job"])
        .spawn()
        .expect("kubectl");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("no output from attach {seen:?}\n{}", env.agent_log()))
            .expect("read")
            .unwrap_or_else(|| panic!("attach ended after {seen:?}\n{}", env.agent_log()));
        seen.extend(tick(&line));
    }
    child.kill().await.expect("kill kubectl");

    // An agent restart leaves the job running: its ticks go on, nothing restarted.
    // (The log is served by the agent: read before it goes.)
    let before = last_tick(&env, "job").await.expect("ticks");
    env.kill_agent().await;
    env.start_agent();
    wait_for(Duration::from_secs(60), || async {
        (last_tick(&env, "job").await? > before + 3).then_some(())
    })
    .await
    .unwrap_or_else(|_| {
        panic!(
            "the job stopped ticking after the restart\n{}",
            env.agent_log()
        )
    });
    let p = env.wait_pod("job", "Ready again", ready).await;
    assert_eq!(phase(&p), "Running");
    assert_eq!(restart_count(&p), 0);

    // Its end is reported.
    let tmp = env.home.vm_dir(&vm).join("guest/tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::write(tmp.join("stop"), "").unwrap();
    let p = env
        .wait_pod("job", "Failed", |p| phase(p) == "Failed")
        .await;
    assert_eq!(terminated(&p).expect("terminated").exit_code, 7);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_with_a_command_on_a_vanilla_image_waits_guest_launcher_missing_and_deletes_cleanly()
{
    let mut env = Env::new(
        "launcher-vanilla",
        knobs(GuestImage::Vanilla),
        &["--guest-launcher-timeout", "2s"],
    )
    .await;
    env.start_agent();
    env.create(&env.shell_pod("job", "echo never")).await;
    // Watched all along: never a running container, never Ready, until it waits with the
    // reason.
    let pods = env.pods();
    let p = tokio::time::timeout(Duration::from_secs(90), async {
        loop {
            let p = pods.get("job").await.expect("get pod");
            let running = p
                .status
                .as_ref()
                .and_then(|s| s.container_statuses.as_ref())
                .and_then(|c| c.first())
                .and_then(|c| c.state.as_ref())
                .is_some_and(|s| s.running.is_some());
            assert!(
                !running && !ready(&p),
                "a running job shown: {:?}",
                p.status
            );
            if waiting_reason(&p).as_deref() == Some("GuestLauncherMissing") {
                return p;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("never GuestLauncherMissing\n{}", env.agent_log()));
    assert_eq!(phase(&p), "Pending");
    let message = waiting_message(&p);
    assert!(
        message.starts_with(
            "the image has neither the tart-kubelet launcher nor the Tart Guest Agent"
        ) && message.ends_with("see docs/guest.md"),
        "{message}"
    );
    env.wait_event("job", "GuestLauncherMissing").await;
    let series = "tart_kubelet_guest_launchers_total{outcome=\"missing\"}";
    assert!(env.metric(series).await.unwrap_or(0.0) >= 1.0);
    assert!(env.agent_pid().is_some(), "the agent keeps running");

    env.delete("job", 10).await;
    env.wait_gone("job").await;
    let vm = Env::vm_of(&p);
    assert!(!env.vms().contains(&vm), "its VM is gone: {:?}", env.vms());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_without_a_command_on_a_vanilla_image_runs_its_vm_as_before() {
    let mut env = Env::new(
        "launcher-vmonly",
        knobs(GuestImage::Vanilla),
        &["--guest-launcher-timeout", "1s"],
    )
    .await;
    env.start_agent();
    env.create(&env.pod("vm")).await;
    env.wait_pod("vm", "Running and Ready", |p| {
        phase(p) == "Running" && ready(p)
    })
    .await;
    let series = "tart_kubelet_guest_launchers_total{outcome=\"missing\"}";
    assert_eq!(env.metric(series).await, Some(0.0), "no launcher awaited");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_whose_sudo_wants_a_password_waits_guest_launcher_failed() {
    let knobs = Knobs::new().with_vm(
        "*",
        VmKnob::default()
            .guest_image(GuestImage::AgentOnly)
            .with_sudo_password(),
    );
    let mut env = Env::new("launcher-sudo", knobs, &[]).await;
    env.start_agent();
    env.create(&env.shell_pod("job", "echo never")).await;
    env.wait_pod("job", "GuestLauncherFailed", |p| {
        waiting_reason(p).as_deref() == Some("GuestLauncherFailed")
    })
    .await;
    env.wait_event("job", "GuestLauncherFailed").await;
}
