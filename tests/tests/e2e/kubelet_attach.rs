//! End to end: `kubectl attach` (v1.32) through the real API server (v1.20.2) to the agent's
//! kubelet API, onto the job of a guest run by fake-tart with the real guest launcher: the
//! job's output from the moment of attaching (none of what it printed before), stdin refused
//! with the reason when the container does not set `stdin: true`, and fed to the job through
//! the launcher's relay when it does: open across attaches, or closed after the first with
//! `stdinOnce`; `kubectl attach -it` to a `tty: true` job (kubectl in a tmux pane) refused at
//! once with the reason, never a session that cannot be used or left.
//!
//! Run: `cargo test -p tart-kubelet-tests --test e2e kubelet_attach:: -- --nocapture`

use crate::pod_support;

use std::{process::Stdio, time::Duration};

use pod_support::{Env, phase, tmux::Tmux};
use tart_kubelet_tests::{
    cluster::{unique, wait_for},
    fake::{Knobs, VmKnob},
};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

async fn env(label: &str) -> Env {
    let knobs = Knobs::new().with_vm("*", VmKnob::default().running_guest_launcher());
    Env::with_kubelet_api(label, knobs, &[]).await.0
}

fn kubectl(env: &Env, args: &[&str]) -> tokio::process::Command {
    env.kubectl_command(args)
}

/// `tick <n>` → n.
fn tick(line: &str) -> Option<u64> {
    line.trim().strip_prefix("tick ")?.parse().ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_attach_follows_the_jobs_output_from_now_and_refuses_stdin() {
    let env = env("attach").await;
    let mut pod = env.pod("job");
    pod.spec.as_mut().unwrap().containers[0].command = Some(vec![
        "/bin/sh".into(),
        "-c".into(),
        "i=0; while true; do echo \"tick $i\"; i=$((i+1)); sleep 0.2; done".into(),
    ]);
    env.create(&pod).await;
    env.wait_pod("job", "Running", |p| phase(p) == "Running")
        .await;

    // What the job printed before attaching, as the Pod log has it.
    let before = wait_for(Duration::from_secs(60), || async {
        let out = kubectl(&env, &["logs", "job"]).output().await.ok()?;
        let last = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(tick)
            .max()?;
        (last >= 3).then_some(last)
    })
    .await
    .unwrap_or_else(|_| panic!("the job's ticks never reached the log\n{}", env.agent_log()));

    let mut child = kubectl(&env, &["attach", "job"]).spawn().expect("kubectl");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    while seen.len() < 5 {
        let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("no output from attach {seen:?}\n{}", env.agent_log()))
            .expect("read");
        let Some(line) = line else {
            let out = child.wait_with_output().await.expect("kubectl");
            panic!(
                "attach ended after {seen:?}: {}\n{}",
                String::from_utf8_lossy(&out.stderr),
                env.agent_log()
            );
        };
        seen.extend(tick(&line));
    }
    assert!(
        seen[0] > before,
        "attach starts after what was printed before it ({before}): {seen:?}"
    );
    assert!(
        seen.windows(2).all(|w| w[1] == w[0] + 1),
        "in order, none lost: {seen:?}"
    );
    child.kill().await.expect("kill kubectl");

    let out = kubectl(&env, &["attach", "-i", "job"])
        .output()
        .await
        .expect("kubectl");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "stdin refused: {err}");
    assert!(err.contains("stdin is not enabled"), "{err}");
}

/// A job that echoes each stdin line, and says when its stdin ends.
const ECHO: &str = "while read -r line; do echo \"got $line\"; done; echo 'stdin closed'";

async fn echo_pod(env: &Env, name: &str, once: bool) {
    let mut pod = env.pod(name);
    let c = &mut pod.spec.as_mut().unwrap().containers[0];
    c.command = Some(vec!["/bin/sh".into(), "-c".into(), ECHO.into()]);
    c.stdin = Some(true);
    c.stdin_once = Some(once);
    env.create(&pod).await;
    env.wait_pod(name, "Running", |p| phase(p) == "Running")
        .await;
}

/// `kubectl attach -i <pod>`: sends `line`, waits for the job's `got <line>`, then kills
/// kubectl (the client goes away, as a user's Ctrl-C does).
async fn attach_and_send(env: &Env, pod: &str, line: &str) {
    let mut cmd = kubectl(env, &["attach", "-i", pod]);
    cmd.stdin(Stdio::piped());
    let mut child = cmd.spawn().expect("kubectl");
    let mut input = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let want = format!("got {line}");
    // Lines typed before the relay is in place would be lost: send until the echo comes back.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let mut seen = Err(());
    while seen.is_err() && tokio::time::Instant::now() < deadline {
        let _ = input.write_all(format!("{line}\n").as_bytes()).await;
        let next = tokio::time::timeout(Duration::from_secs(2), lines.next_line()).await;
        if let Ok(Ok(Some(l))) = next
            && l.trim() == want
        {
            seen = Ok(());
        }
    }
    if seen.is_err() {
        let _ = child.kill().await;
        let out = child.wait_with_output().await.expect("kubectl");
        panic!(
            "{want:?} never came back: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            env.agent_log()
        );
    }
    child.kill().await.expect("kill kubectl");
}

async fn log_of(env: &Env, pod: &str) -> String {
    let out = kubectl(env, &["logs", pod])
        .output()
        .await
        .expect("kubectl");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_attach_i_feeds_the_jobs_stdin_across_attaches() {
    let env = env("attach-stdin").await;
    echo_pod(&env, "echo", false).await;
    attach_and_send(&env, "echo", "hello").await;
    attach_and_send(&env, "echo", "again").await;
    let log = log_of(&env, "echo").await;
    assert!(
        log.contains("got hello") && log.contains("got again"),
        "{log}"
    );
    assert!(
        !log.contains("stdin closed"),
        "the job's stdin stays open between attaches: {log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdin_once_closes_the_jobs_stdin_when_the_first_attach_ends() {
    let env = env("attach-once").await;
    echo_pod(&env, "once", true).await;
    attach_and_send(&env, "once", "one").await;
    let closed = wait_for(Duration::from_secs(60), || async {
        log_of(&env, "once")
            .await
            .contains("stdin closed")
            .then_some(())
    })
    .await;
    assert!(
        closed.is_ok(),
        "the job never read end of file: {}\n{}",
        log_of(&env, "once").await,
        env.agent_log()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_attach_it_to_a_tty_job_is_refused_at_once_with_the_reason() {
    let env = env("attach-tty").await;
    let mut pod = env.pod("tty");
    let c = &mut pod.spec.as_mut().unwrap().containers[0];
    c.command = Some(vec!["/bin/sh".into(), "-c".into(), ECHO.into()]);
    c.stdin = Some(true);
    c.tty = Some(true);
    env.create(&pod).await;
    env.wait_pod("tty", "Running", |p| phase(p) == "Running")
        .await;

    // A real terminal, so kubectl puts it in raw mode and asks for `tty=1`; the pane stays
    // open after kubectl ends (`exec cat`) to be read.
    let tmux = Tmux(unique("attach-tty"));
    let cmd = format!(
        "kubectl --kubeconfig {} -n {} attach -it tty; echo \"kubectl exited $?\"; exec cat",
        env.cp.kubeconfig_path().display(),
        env.ns
    );
    tmux.run(&[
        "new-session",
        "-d",
        "-s",
        "t",
        "-x",
        "200",
        "-y",
        "50",
        &cmd,
    ])
    .await;
    let ended = tmux.wait_for_text("kubectl exited 1", 1).await;
    let pane = tmux.run(&["capture-pane", "-p", "-J", "-t", "t"]).await;
    assert!(
        ended.is_ok(),
        "kubectl attach -it did not end by itself:\n{pane}\n{}",
        env.agent_log()
    );
    assert!(
        pane.contains("with a terminal") && pane.contains("kubectl exec -it"),
        "the reason and the way out are shown:\n{pane}"
    );
}
