//! End to end: `kubectl exec` (v1.32) through the real API server (v1.20.2) to the agent's
//! kubelet API — over kubectl's first choice, a WebSocket with `v5.channel.k8s.io`
//! (kubelet_websocket.rs covers both transports explicitly) — into a guest run by fake-tart
//! with the real guest launcher, where `tart exec` runs the
//! command as a real process: output and exit code come back, stdin reaches the command, a
//! killed kubectl leaves no `tart exec` and no guest process behind, and a Pod that is not
//! running gets a clear error at once.
//!
//! Run: `cargo test -p tart-kubelet-tests --test e2e kubelet_exec:: -- --nocapture`

use crate::pod_support;

use std::{path::Path, process::Stdio, time::Duration};

use pod_support::{Env, phase, tmux::Tmux, waiting_reason};
use tart_kubelet_tests::{
    agent::free_port,
    cluster::{ControlPlane, wait_for},
    fake::{ImageKnob, Knobs, VmKnob, processes_of_home},
};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const MISSING_IMAGE: &str = "ghcr.io/example/never-there:1";

async fn env(label: &str) -> Env {
    let cp = tokio::task::spawn_blocking(ControlPlane::shared)
        .await
        .expect("control plane");
    let args = cp.kubelet_api_args(free_port().expect("free port").port());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let knobs = Knobs::new()
        .with_vm("*", VmKnob::default().running_guest_launcher())
        .with_image(MISSING_IMAGE, ImageKnob::missing());
    let mut env = Env::new(label, knobs, &args).await;
    env.start_agent();
    env
}

/// A Pod whose guest job runs until deleted.
async fn running_pod(env: &Env, name: &str) {
    let mut pod = env.pod(name);
    pod.spec.as_mut().unwrap().containers[0].command =
        Some(vec!["/bin/sh".into(), "-c".into(), "sleep 600".into()]);
    env.create(&pod).await;
    env.wait_pod(name, "Running", |p| phase(p) == "Running")
        .await;
}

fn kubectl(env: &Env, args: &[&str]) -> tokio::process::Command {
    env.kubectl_command(args)
}

/// Exit code, stdout, stderr; kubectl must finish within 60 s.
async fn run(mut cmd: tokio::process::Command, stdin: Option<&[u8]>) -> (i32, String, String) {
    if stdin.is_some() {
        cmd.stdin(Stdio::piped());
    }
    let mut child = cmd.spawn().expect("kubectl");
    if let Some(input) = stdin {
        let mut w = child.stdin.take().unwrap();
        w.write_all(input).await.unwrap();
        drop(w);
    }
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("kubectl exec did not finish within 60 s")
        .expect("kubectl");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (
        out.status.code().unwrap_or(-1),
        text(&out.stdout),
        text(&out.stderr),
    )
}

/// fake-tart processes of this home whose command line contains `needle`.
fn processes_with(home: &Path, needle: &str) -> Vec<(i32, String)> {
    processes_of_home(home)
        .into_iter()
        .filter_map(|pid| {
            let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let line = String::from_utf8_lossy(&raw).replace('\0', " ");
            line.contains(needle).then_some((pid, line))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_exec_returns_the_output_and_the_exit_code_of_the_guest_command() {
    let env = env("exec").await;
    running_pod(&env, "job").await;

    let (code, out, err) = run(
        kubectl(
            &env,
            &[
                "exec",
                "job",
                "--",
                "sh",
                "-c",
                "echo hi; echo oops >&2; exit 3",
            ],
        ),
        None,
    )
    .await;
    assert_eq!(
        code,
        3,
        "stdout {out:?} stderr {err:?}\n{}",
        env.agent_log()
    );
    assert_eq!(out, "hi\n");
    assert!(err.starts_with("oops\n"), "{err:?}");
    assert!(
        err.contains("command terminated with exit code 3"),
        "{err:?}"
    );

    // Argv is passed verbatim (no shell in between), and success is exit 0.
    let (code, out, err) = run(
        kubectl(&env, &["exec", "job", "--", "echo", "a  b", "$HOME"]),
        None,
    )
    .await;
    assert_eq!((code, out.as_str()), (0, "a  b $HOME\n"), "{err}");

    // stdin through -i, larger than SPDY's 64 KiB initial window, with EOF at the end.
    let input = vec![b'x'; 300 * 1024];
    let (code, out, err) = run(
        kubectl(&env, &["exec", "-i", "job", "--", "wc", "-c"]),
        Some(&input),
    )
    .await;
    assert_eq!((code, out.trim()), (0, "307200"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_kubectl_exec_leaves_no_tart_exec_and_no_guest_process() {
    let env = env("exec-kill").await;
    running_pod(&env, "job").await;

    let mut child = kubectl(
        &env,
        &[
            "exec",
            "job",
            "--",
            "sh",
            "-c",
            "echo started; exec sleep 4321",
        ],
    )
    .spawn()
    .expect("kubectl");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
        .await
        .unwrap_or_else(|_| panic!("no output from exec\n{}", env.agent_log()));
    assert_eq!(first.unwrap().as_deref(), Some("started"));
    assert!(
        !processes_with(env.home.path(), "sleep 4321").is_empty(),
        "the guest command runs"
    );
    assert!(!processes_with(env.home.path(), " exec ").is_empty());

    child.kill().await.expect("kill kubectl");
    let gone = wait_for(Duration::from_secs(30), || async {
        let left = processes_with(env.home.path(), " exec ");
        let guest = processes_with(env.home.path(), "sleep 4321");
        (left.is_empty() && guest.is_empty()).then_some(())
    })
    .await;
    assert!(
        gone.is_ok(),
        "left behind: {:?} {:?}\n{}",
        processes_with(env.home.path(), " exec "),
        processes_with(env.home.path(), "sleep 4321"),
        env.agent_log()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_into_a_pod_that_is_not_running_fails_at_once_with_a_clear_error() {
    let env = env("exec-pending").await;
    let mut pod = env.pod("stuck");
    pod.spec.as_mut().unwrap().containers[0].image = Some(MISSING_IMAGE.into());
    env.create(&pod).await;
    env.wait_pod("stuck", "ErrImagePull", |p| waiting_reason(p).is_some())
        .await;

    let started = std::time::Instant::now();
    let (code, _, err) = run(kubectl(&env, &["exec", "stuck", "--", "true"]), None).await;
    assert_ne!(code, 0);
    assert!(
        err.contains("container not found (\"vm\")") && err.contains("is not running"),
        "{err}\n{}",
        env.agent_log()
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "took {:?}",
        started.elapsed()
    );

    let (code, _, err) = run(
        kubectl(&env, &["exec", "stuck", "-c", "db", "--", "true"]),
        None,
    )
    .await;
    assert_ne!(code, 0);
    assert!(
        err.contains("container not found (\"db\")") || err.contains("db"),
        "{err}"
    );
}

/// The agent of `env`: the live process started with `--node-name <node>`.
fn agent_pid(env: &Env) -> u32 {
    let needle = format!("--node-name\0{}\0", env.node);
    tart_kubelet_tests::cluster::live_pids()
        .into_iter()
        .find(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.windows(needle.len()).any(|w| w == needle.as_bytes()))
        })
        .expect("agent process")
}

fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_exec_sessions_leave_no_process_and_no_descriptor_behind() {
    let env = env("exec-many").await;
    running_pod(&env, "job").await;
    let pid = agent_pid(&env);
    // One session first, so lazily opened descriptors (connection pools) are counted.
    let (code, _, err) = run(kubectl(&env, &["exec", "job", "--", "true"]), None).await;
    assert_eq!(code, 0, "{err}");
    let before = open_fds(pid);
    for i in 0..100 {
        let (code, out, err) = run(
            kubectl(
                &env,
                &[
                    "exec",
                    "job",
                    "--",
                    "sh",
                    "-c",
                    &format!("echo {i}; exit {}", i % 3),
                ],
            ),
            None,
        )
        .await;
        assert_eq!(
            (code, out.trim()),
            (i % 3, i.to_string().as_str()),
            "session {i}: {err}"
        );
    }
    let settled = wait_for(Duration::from_secs(30), || async {
        let left = processes_with(env.home.path(), " exec ");
        let fds = open_fds(pid);
        (left.is_empty() && fds <= before + 2).then_some(fds)
    })
    .await;
    assert!(
        settled.is_ok(),
        "descriptors {before} -> {}, exec processes {:?}",
        open_fds(pid),
        processes_with(env.home.path(), " exec ")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_it_under_tmux_follows_a_window_resize() {
    let env = env("exec-tty").await;
    running_pod(&env, "job").await;
    let tmux = Tmux(tart_kubelet_tests::cluster::unique("exec-tty"));
    let cmd = format!(
        "kubectl --kubeconfig {} -n {} exec -it job -- sh",
        env.cp.kubeconfig_path().display(),
        env.ns
    );
    tmux.run(&["new-session", "-d", "-s", "t", "-x", "80", "-y", "24", &cmd])
        .await;
    let r = wait_for(Duration::from_secs(30), || async {
        (!tmux.pane().await.trim().is_empty()).then_some(())
    })
    .await;
    assert!(r.is_ok(), "no shell in the pane\n{}", env.agent_log());

    let first = tmux.pane_size().await;
    tmux.run(&["send-keys", "-t", "t", "stty size", "Enter"])
        .await;
    let shown = tmux.wait_for_text(&first, 1).await;
    assert!(
        shown.is_ok(),
        "{first:?} not shown:\n{}\n{}",
        tmux.pane().await,
        env.agent_log()
    );

    tmux.run(&["resize-window", "-t", "t", "-x", "120", "-y", "40"])
        .await;
    let second = tmux.pane_size().await;
    assert_ne!(first, second);
    tmux.run(&["send-keys", "-t", "t", "stty size", "Enter"])
        .await;
    let shown = tmux.wait_for_text(&second, 1).await;
    assert!(
        shown.is_ok(),
        "{second:?} not shown:\n{}\n{}",
        tmux.pane().await,
        env.agent_log()
    );

    tmux.run(&["send-keys", "-t", "t", "exit 4", "Enter"]).await;
    let gone = wait_for(Duration::from_secs(30), || async {
        processes_with(env.home.path(), " exec ")
            .is_empty()
            .then_some(())
    })
    .await;
    assert!(
        gone.is_ok(),
        "{:?}",
        processes_with(env.home.path(), " exec ")
    );
}
