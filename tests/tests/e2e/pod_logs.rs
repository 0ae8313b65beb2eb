//! End to end: `kubectl logs` (v1.32) through the real API server to the agent's kubelet API,
//! for guest jobs run by fake-tart with the real guest launcher: a finished job's output,
//! `--tail` and `--timestamps`, `-f` while the job prints, `-p` after a crash-loop restart,
//! the log gone from disk once the Pod is deleted, and a 253-character Pod name in a
//! 63-character namespace.

use crate::pod_support;

use std::{process::Stdio, time::Duration};

use pod_support::{Env, phase};
use tart_kubelet_tests::{
    cluster::{unique, wait_for},
    fake::{Knobs, VmKnob},
};
use tokio::io::{AsyncBufReadExt, BufReader};

/// An agent serving the kubelet API with the cluster's test PKI, its VMs running the guest
/// launcher.
async fn env(label: &str) -> Env {
    let knobs = Knobs::new().with_vm("*", VmKnob::default().running_guest_launcher());
    Env::with_kubelet_api(label, knobs, &[]).await.0
}

fn job(env: &Env, name: &str, restart: &str, script: &str) -> k8s_openapi::api::core::v1::Pod {
    let mut pod = env.pod(name);
    let spec = pod.spec.as_mut().unwrap();
    spec.restart_policy = Some(restart.into());
    spec.containers[0].command = Some(vec!["/bin/sh".into(), "-c".into(), script.into()]);
    pod
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_logs_shows_the_guest_jobs_output_and_follows_it() {
    let env = env("logs").await;
    env.create(&job(
        &env,
        "done",
        "Never",
        "for i in 1 2 3 4 5; do echo \"line $i\"; done; echo 'to stderr' >&2",
    ))
    .await;
    env.create(&job(
        &env,
        "ticker",
        "Never",
        // Ticking once the agent follows `tart run`'s output too (after its 5 s start window),
        // so a line that reached that output as well would show twice.
        "sleep 6; for i in 1 2 3; do echo \"tick $i\"; sleep 1; done; sleep 600",
    ))
    .await;
    let done = env
        .wait_pod("done", "Succeeded", |p| phase(p) == "Succeeded")
        .await;

    // A finished job's whole output, then --tail and --timestamps.
    let r = wait_for(Duration::from_secs(30), || async {
        let (ok, out, _) = env.kubectl(&["logs", "done"]).await;
        (ok && out.contains("to stderr")).then_some(out)
    })
    .await;
    let out = r.unwrap_or_else(|e| panic!("kubectl logs: {e}\n{}", env.agent_log()));
    for i in 1..=5 {
        assert!(out.contains(&format!("line {i}\n")), "{out}");
    }
    let (ok, tail, err) = env.kubectl(&["logs", "done", "--tail=2"]).await;
    assert!(ok, "{err}");
    assert_eq!(tail.lines().count(), 2, "{tail}");
    let (ok, stamped, err) = env.kubectl(&["logs", "done", "--timestamps"]).await;
    assert!(ok, "{err}");
    let first = stamped.lines().next().unwrap_or_default();
    assert!(
        first.len() > 30 && first.as_bytes()[4] == b'-' && first.contains('T'),
        "no RFC 3339 time in front: {first:?}"
    );

    // -f prints the ticks as the job prints them.
    env.wait_pod("ticker", "Running", |p| phase(p) == "Running")
        .await;
    let kc = env.cp.kubeconfig_path();
    let mut follow = tokio::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&kc)
        .args(["-n", &env.ns, "logs", "-f", "ticker"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("kubectl logs -f");
    let mut lines = BufReader::new(follow.stdout.take().unwrap()).lines();
    let got = tokio::time::timeout(Duration::from_secs(60), async {
        let mut seen = vec![];
        while let Ok(Some(l)) = lines.next_line().await {
            seen.push(l.clone());
            if l == "tick 3" {
                break;
            }
        }
        seen
    })
    .await
    .unwrap_or_else(|_| panic!("kubectl logs -f saw no tick 3\n{}", env.agent_log()));
    assert_eq!(got, vec!["tick 1", "tick 2", "tick 3"]);
    let _ = follow.start_kill();

    // Deleting the Pod removes its log from disk.
    let dir = env.pod_log_dir.join(format!(
        "{}_done_{}",
        env.ns,
        done.metadata.uid.clone().unwrap()
    ));
    assert!(dir.exists(), "{dir:?}");
    env.delete("done", 5).await;
    env.wait_gone("done").await;
    let r = wait_for(Duration::from_secs(30), || {
        let d = dir.clone();
        async move { (!d.exists()).then_some(()) }
    })
    .await;
    assert!(r.is_ok(), "{dir:?} left behind");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_logs_previous_shows_the_run_before_a_restart() {
    let env = env("logs-prev").await;
    env.create(&job(
        &env,
        "crash",
        "Always",
        "echo \"run at $(date +%s%N)\"; exit 1",
    ))
    .await;
    env.wait_pod("crash", "restarted", |p| {
        p.status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .is_some_and(|c| c[0].restart_count >= 1)
    })
    .await;
    let r = wait_for(Duration::from_secs(30), || async {
        let (ok, out, _) = env.kubectl(&["logs", "crash", "-p"]).await;
        (ok && out.starts_with("run at ")).then_some(out)
    })
    .await;
    assert!(r.is_ok(), "kubectl logs -p: {r:?}\n{}", env.agent_log());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_logs_serves_a_253_character_name_in_a_63_character_namespace() {
    let env = env("logs-long").await;
    // The longest names Kubernetes allows: their log directory's name would pass 255 bytes.
    let base = unique("long");
    let ns = format!("{base}-{}", "n".repeat(62 - base.len()));
    let name = format!("job-{}", "x".repeat(249));
    assert_eq!((ns.len(), name.len()), (63, 253));
    let nss: kube::Api<k8s_openapi::api::core::v1::Namespace> = kube::Api::all(env.admin.clone());
    let mut n = k8s_openapi::api::core::v1::Namespace::default();
    n.metadata.name = Some(ns.clone());
    nss.create(&Default::default(), &n)
        .await
        .expect("create namespace");
    let mut pod = job(&env, &name, "Never", "echo from-the-long-named-pod");
    pod.metadata.namespace = Some(ns.clone());
    let pods: kube::Api<k8s_openapi::api::core::v1::Pod> =
        kube::Api::namespaced(env.admin.clone(), &ns);
    pods.create(&Default::default(), &pod)
        .await
        .expect("create pod");
    let r = wait_for(Duration::from_secs(60), || async {
        // kubectl takes the last `-n`: this namespace, not the test's.
        let (ok, out, _) = env.kubectl(&["-n", &ns, "logs", &name]).await;
        (ok && out == "from-the-long-named-pod\n").then_some(())
    })
    .await;
    assert!(r.is_ok(), "kubectl logs: {r:?}\n{}", env.agent_log());
}
