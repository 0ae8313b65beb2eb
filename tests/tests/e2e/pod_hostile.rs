//! End to end: a hostile guest attacks its status share (fake-tart's `guest_attack` knob, played
//! once the launcher has ended) and gains nothing. Links to a host file holding a marker in
//! place of `stdout`, `exit_code`, `termination-log` and `vitals`: the marker is nowhere
//! outside the guest (`kubectl logs`, the Pod, its events, the agent's log, the Pod's log
//! files), each file gets a `GuestFileRefused` event and the Pod fails, never `Succeeded`.
//! FIFOs in their place: nothing hangs, and another Pod's log keeps flowing. 2 GiB of output
//! at once: the log stays within its rotation, the agent's RSS stays flat and the output after
//! the flood is served at once.

use crate::pod_support;

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use pod_support::{Env, phase, terminated};
use tart_kubelet_tests::{
    cluster::{unique, wait_for},
    fake::{AttackKind, Knobs, VmKnob},
};

/// The files the attacks aim at.
const FILES: [&str; 4] = ["stdout", "exit_code", "termination-log", "vitals"];

async fn env(label: &str, files: &[&str], attack: AttackKind) -> Env {
    let vm = VmKnob::default()
        .running_guest_launcher()
        .attacking_status(files, attack);
    // The collector starts once `tart run` passes its start window: a short one, so the jobs
    // below are collected before their launcher ends and the attack comes.
    let args = ["--run-start-window", "1s"];
    Env::with_kubelet_api(label, Knobs::new().with_vm("*", vm), &args)
        .await
        .0
}

fn job(env: &Env, name: &str, script: &str) -> Pod {
    let mut pod = env.pod(name);
    let spec = pod.spec.as_mut().unwrap();
    spec.restart_policy = Some("Never".into());
    spec.containers[0].command = Some(vec!["/bin/sh".into(), "-c".into(), script.into()]);
    pod
}

/// Run a job that prints `visible-output` and ends, and wait for its Pod to end either way.
async fn run_to_end(env: &Env, name: &str) -> Pod {
    env.create(&job(env, name, "echo visible-output; sleep 4"))
        .await;
    env.wait_pod(name, "finished", |p| {
        matches!(phase(p), "Succeeded" | "Failed")
    })
    .await
}

/// Wait until the Pod has a `GuestFileRefused` event naming each of [`FILES`].
async fn refusals(env: &Env, pod: &str) -> Vec<String> {
    let got = wait_for(Duration::from_secs(60), || async {
        let notes: Vec<String> = env
            .events(pod)
            .await
            .into_iter()
            .filter(|(_, r, _)| r == "GuestFileRefused")
            .map(|(_, _, n)| n)
            .collect();
        FILES
            .iter()
            .all(|f| {
                let f = format!(" status/{f}:");
                notes.iter().any(|n| n.contains(&f))
            })
            .then_some(notes)
    })
    .await;
    got.unwrap_or_else(|e| {
        panic!("not every file refused: {e}\n{}", env.agent_log());
    })
}

/// Every file under `dir`, read whole.
fn all_files(dir: &std::path::Path, out: &mut Vec<(std::path::PathBuf, Vec<u8>)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        match e.file_type() {
            Ok(t) if t.is_dir() => all_files(&p, out),
            Ok(t) if t.is_file() => out.push((p.clone(), std::fs::read(&p).unwrap_or_default())),
            _ => {}
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn links_to_a_host_file_in_the_status_share_leak_nothing() {
    let host = tempfile::tempdir().expect("tempdir");
    let marker = unique("hostsecret");
    let secret = host.path().join("credentials");
    std::fs::write(&secret, format!("0\n{marker}\n")).expect("marker");
    let target = secret.display().to_string();
    let env = env("hostile-link", &FILES, AttackKind::Symlink(target)).await;
    let pod = run_to_end(&env, "linker").await;
    let t = terminated(&pod).expect("terminated");
    let (code, reason, message) = (t.exit_code, t.reason.unwrap_or_default(), t.message);
    assert_eq!(phase(&pod), "Failed", "a tampered exit code is no success");
    assert_eq!((code, reason.as_str()), (1, "Error"));
    assert_eq!(
        message.as_deref(),
        Some("the guest put a symlink in place of status/exit_code: its exit code is unknown")
    );
    let notes = refusals(&env, "linker").await;
    assert!(notes.iter().all(|n| n.contains("a symlink")), "{notes:?}");

    let (ok, logs, err) = env.kubectl(&["logs", "linker"]).await;
    assert!(ok, "{err}");
    assert!(
        logs.contains("visible-output"),
        "{logs:?}\n{}",
        env.agent_log()
    );
    let pod = env.pods().get("linker").await.expect("pod");
    let events = format!("{:?}", env.events("linker").await);
    let agent_log = std::fs::read_to_string(&env.log_path).unwrap_or_default();
    for file in ["stdout", "exit_code"] {
        let warned = agent_log
            .lines()
            .any(|l| l.contains("refused: not a regular file") && l.contains(file));
        assert!(warned, "no WARN for the refused {file}\n{agent_log}");
    }
    let mut files = vec![];
    all_files(&env.pod_log_dir, &mut files);
    assert!(!files.is_empty(), "no Pod log files");
    let places = [
        ("kubectl logs", logs),
        ("the Pod", serde_json::to_string(&pod).expect("json")),
        ("its events", events),
        ("the agent's log", agent_log),
    ];
    for (place, text) in places {
        assert!(!text.contains(&marker), "the host file leaked into {place}");
    }
    for (path, body) in files {
        let leaked = body.windows(marker.len()).any(|w| w == marker.as_bytes());
        assert!(!leaked, "the host file leaked into {path:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifos_in_the_status_share_hang_nothing() {
    let env = env("hostile-fifo", &FILES, AttackKind::Fifo).await;
    // Never ends on its own: its launcher never exits, so it is never attacked.
    env.create(&job(
        &env,
        "ticker",
        "i=0; while true; do i=$((i+1)); echo \"tick $i\"; sleep 0.2; done",
    ))
    .await;
    env.wait_pod("ticker", "Running", |p| phase(p) == "Running")
        .await;
    let pod = run_to_end(&env, "fifo").await;
    assert_eq!(phase(&pod), "Failed");
    let notes = refusals(&env, "fifo").await;
    assert!(notes.iter().all(|n| n.contains("a fifo")), "{notes:?}");
    let (ok, logs, err) = env.kubectl(&["logs", "fifo"]).await;
    assert!(ok && logs.contains("visible-output"), "{logs}{err}");

    // The other Pod's log keeps flowing.
    let (ok, first, err) = env.kubectl(&["logs", "ticker", "--tail=1"]).await;
    assert!(ok, "{err}");
    let later = wait_for(Duration::from_secs(20), || async {
        let (ok, now, _) = env.kubectl(&["logs", "ticker", "--tail=1"]).await;
        (ok && now.contains("tick ") && now != first).then_some(now)
    })
    .await;
    assert!(later.is_ok(), "the ticker's log stopped at {first:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_gib_of_output_at_once_keeps_the_log_in_budget_and_the_agent_flat() {
    const FLOOD: u64 = 2 << 30;
    let env = env("hostile-flood", &["stdout"], AttackKind::Grow(FLOOD)).await;
    let pid = env.agent_pid().expect("agent pid");
    // The flood comes when the job ends; the agent's size with the Pod running is the
    // baseline.
    env.create(&job(&env, "flood", "echo before-flood; sleep 5"))
        .await;
    env.wait_pod("flood", "started", |p| phase(p) != "Pending")
        .await;
    let baseline = rss_bytes(pid).expect("rss");
    let (stop, mut peak_rx) = rss_sampler(pid);
    let pod = env
        .wait_pod("flood", "Succeeded", |p| phase(p) == "Succeeded")
        .await;
    let after = wait_for(Duration::from_secs(30), || async {
        // The last records: the flood's end, the flood's last line, `tart run`'s own.
        let (ok, out, _) = env.kubectl(&["logs", "flood", "--tail=3"]).await;
        (ok && out.lines().any(|l| l == "after the flood")).then_some(())
    })
    .await;
    let _ = stop.send(());
    let peak = peak_rx.recv().await.unwrap_or(0);
    assert!(
        after.is_ok(),
        "the output after 2 GiB was not served within 30 s\n{}",
        env.agent_log()
    );
    let skipped = env.wait_event("flood", "GuestOutputSkipped").await;
    assert!(
        skipped.iter().any(|(_, _, n)| n.contains("status/stdout")),
        "{skipped:?}"
    );
    let uid = pod.metadata.uid.clone().expect("uid");
    let dir = env.pod_log_dir.join(format!("{}_flood_{uid}", env.ns));
    let mut files = vec![];
    all_files(&dir, &mut files);
    let kept: usize = files.iter().map(|(_, b)| b.len()).sum();
    // Kubelet's rotation: 5 files of at most 10 MiB.
    assert!(kept <= 51 << 20, "{kept} bytes of log kept");
    let grew = peak.saturating_sub(baseline);
    eprintln!(
        "flood: agent RSS {} MiB before, peak {} MiB; {kept} bytes of log kept",
        baseline >> 20,
        peak >> 20
    );
    assert!(
        grew < 64 << 20,
        "the agent grew by {} MiB (from {} MiB)",
        grew >> 20,
        baseline >> 20
    );
}

/// `VmRSS` of `pid`, from `/proc`.
fn rss_bytes(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = s.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Samples `pid`'s RSS every 50 ms until told to stop, then sends the peak.
fn rss_sampler(
    pid: u32,
) -> (
    tokio::sync::oneshot::Sender<()>,
    tokio::sync::mpsc::Receiver<u64>,
) {
    let (stop_tx, mut stop_rx) = tokio::sync::oneshot::channel();
    let (peak_tx, peak_rx) = tokio::sync::mpsc::channel(1);
    tokio::spawn(async move {
        let mut peak = 0;
        let mut tick = tokio::time::interval(Duration::from_millis(50));
        loop {
            tokio::select! {
                _ = tick.tick() => peak = peak.max(rss_bytes(pid).unwrap_or(0)),
                _ = &mut stop_rx => break,
            }
        }
        let _ = peak_tx.send(peak).await;
    });
    (stop_tx, peak_rx)
}
