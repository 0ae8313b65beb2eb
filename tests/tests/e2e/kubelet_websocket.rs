//! End to end: exec over WebSocket through the real API server (v1.20.2, which passes the
//! upgrade through) to the agent's kubelet API, into a guest run by fake-tart with the real
//! guest launcher. kubectl 1.32 now stays on its first attempt, a WebSocket with
//! `v5.channel.k8s.io`; forced onto SPDY it still works; and Debian's python3-kubernetes, a
//! client none of this code was written against, gets the output and the exit code over
//! `v4.channel.k8s.io`, and its stdin written as text messages (`write_stdin("...")`) reaches
//! the command. Which transport served each session is read from the agent's log.
//!
//! Run: `cargo test -p tart-kubelet-tests --test e2e kubelet_websocket:: -- --nocapture`

use crate::pod_support;

use std::{process::Stdio, time::Duration};

use pod_support::{Env, phase};
use tart_kubelet_tests::{
    agent::free_port,
    cluster::{ControlPlane, wait_for},
    fake::{Knobs, VmKnob},
};

async fn env(label: &str) -> Env {
    let cp = tokio::task::spawn_blocking(ControlPlane::shared)
        .await
        .expect("control plane");
    let args = cp.kubelet_api_args(free_port().expect("free port").port());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let knobs = Knobs::new().with_vm("*", VmKnob::default().running_guest_launcher());
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

/// Exit code, stdout, stderr of `cmd`, which must finish within 60 s.
async fn run(mut cmd: tokio::process::Command) -> (i32, String, String) {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .expect("did not finish within 60 s")
        .expect("spawn");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (
        out.status.code().unwrap_or(-1),
        text(&out.stdout),
        text(&out.stderr),
    )
}

fn kubectl(env: &Env, args: &[&str]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new("kubectl");
    cmd.arg("--kubeconfig")
        .arg(env.cp.kubeconfig_path())
        .args(["-n", &env.ns])
        .args(args);
    cmd
}

/// The agent's "exec session ended" lines served over `transport` (`websocket` or `spdy`).
fn ended_over(env: &Env, transport: &str) -> usize {
    let log = std::fs::read_to_string(&env.log_path).unwrap_or_default();
    let field = format!("transport=\"{transport}\"");
    log.lines()
        .filter(|l| l.contains("exec session ended") && l.contains(&field))
        .count()
}

/// Waits until the agent logged `n` sessions over `transport`.
async fn wait_sessions(env: &Env, transport: &str, n: usize) {
    let r = wait_for(Duration::from_secs(30), || async {
        (ended_over(env, transport) >= n).then_some(())
    })
    .await;
    assert!(
        r.is_ok(),
        "{n} session(s) over {transport} expected, saw {}\n{}",
        ended_over(env, transport),
        env.agent_log()
    );
}

const HI_EXIT_3: [&str; 6] = ["exec", "job", "--", "sh", "-c", "echo hi; exit 3"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_exec_is_served_over_websocket_and_over_spdy_when_forced() {
    let env = env("ws-kubectl").await;
    running_pod(&env, "job").await;

    let (code, out, err) = run(kubectl(&env, &HI_EXIT_3)).await;
    assert_eq!(
        (code, out.as_str()),
        (3, "hi\n"),
        "{err}\n{}",
        env.agent_log()
    );
    assert!(err.contains("command terminated with exit code 3"), "{err}");
    wait_sessions(&env, "websocket", 1).await;
    assert_eq!(ended_over(&env, "spdy"), 0, "no SPDY fallback happened");

    let mut forced = kubectl(&env, &HI_EXIT_3);
    forced.env("KUBECTL_REMOTE_COMMAND_WEBSOCKETS", "false");
    let (code, out, err) = run(forced).await;
    assert_eq!(
        (code, out.as_str()),
        (3, "hi\n"),
        "{err}\n{}",
        env.agent_log()
    );
    wait_sessions(&env, "spdy", 1).await;
    assert_eq!(ended_over(&env, "websocket"), 1);
}

/// What every script starts with: the client from the kubeconfig in `argv[1]`.
const PYTHON_PROLOGUE: &str = r#"
import json, sys
from kubernetes import client, config
from kubernetes.stream import stream
config.load_kube_config(config_file=sys.argv[1])
core = client.CoreV1Api()
"#;

/// Runs `script` (after [`PYTHON_PROLOGUE`]) with Debian's interpreter, where
/// python3-kubernetes is installed (tests/cluster/build.sh), for Pod `pod`: the JSON it
/// prints.
async fn python(env: &Env, script: &str, pod: &str) -> serde_json::Value {
    let mut cmd = tokio::process::Command::new("/usr/bin/python3");
    cmd.arg("-c")
        .arg(format!("{PYTHON_PROLOGUE}{script}"))
        .arg(env.cp.kubeconfig_path())
        .arg(&env.ns)
        .arg(pod);
    let (code, out, err) = run(cmd).await;
    assert_eq!(code, 0, "python failed: {err}\n{}", env.agent_log());
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{out:?}: {e}\n{err}"))
}

/// Debian's python3-kubernetes: `stream()` over its WebSocket client (`v4.channel.k8s.io`).
const PYTHON_EXEC: &str = r#"
ws = stream(core.connect_get_namespaced_pod_exec, sys.argv[3], sys.argv[2],
            command=["sh", "-c", "echo hi; exit 3"],
            stderr=True, stdin=False, stdout=True, tty=False, _preload_content=False)
ws.run_forever(timeout=60)
print(json.dumps({"stdout": ws.read_stdout(), "code": ws.returncode}))
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_kubernetes_stream_gets_the_output_and_the_exit_code() {
    let env = env("ws-python").await;
    running_pod(&env, "job").await;
    let v = python(&env, PYTHON_EXEC, "job").await;
    assert_eq!(v["stdout"], "hi\n", "{v}");
    assert_eq!(v["code"], 3, "{v}");
    wait_sessions(&env, "websocket", 1).await;
}

/// python3-kubernetes' own way to feed stdin: `write_stdin(str)`, which sends a text message
/// (`"\x00hello\n"`) on `v4.channel.k8s.io`.
const PYTHON_TEXT_STDIN: &str = r#"
ws = stream(core.connect_get_namespaced_pod_exec, sys.argv[3], sys.argv[2],
            command=["sh", "-c", "read line; echo \"got $line\""],
            stderr=True, stdin=True, stdout=True, tty=False, _preload_content=False)
ws.write_stdin("hello\n")
ws.run_forever(timeout=60)
print(json.dumps({"stdout": ws.read_stdout(), "code": ws.returncode}))
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_kubernetes_stdin_written_as_text_reaches_the_command() {
    let env = env("ws-text").await;
    running_pod(&env, "job").await;
    let v = python(&env, PYTHON_TEXT_STDIN, "job").await;
    assert_eq!(v["stdout"], "got hello\n", "{v}\n{}", env.agent_log());
    assert_eq!(v["code"], 0, "{v}");
}
