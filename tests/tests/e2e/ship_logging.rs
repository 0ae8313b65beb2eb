//! The agent binary's own logging, as an operator configures it: `--log-format json` writes
//! one JSON object per line, `--log-file` receives them, and with a log file only warnings and
//! errors go to stderr (launchd's StandardErrorPath stays small). No API server is needed:
//! the agent starts, fails to reach one, logs it, and is stopped with SIGTERM.
use std::{path::Path, time::Duration};

use tart_kubelet_tests::cluster::wait_for;

const AGENT: &str = env!("CARGO_BIN_EXE_agent-under-test");
const FAKE_TART: &str = env!("CARGO_BIN_EXE_fake-tart");

/// A kubeconfig for a server nothing listens on.
fn dead_kubeconfig(dir: &Path) -> std::path::PathBuf {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let p = dir.join("kubeconfig");
    std::fs::write(
        &p,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:{port}\n\
             contexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\n\
             users:\n- name: u\n  user:\n    token: t\n"
        ),
    )
    .unwrap();
    p
}

#[tokio::test]
async fn json_logs_go_to_the_log_file_and_only_warnings_to_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let log = dir.path().join("logs/tart-kubelet.log");
    let child = tokio::process::Command::new(AGENT)
        .arg("--kubeconfig")
        .arg(dead_kubeconfig(dir.path()))
        .args(["--node-name", "mac-log", "--admin-addr", "127.0.0.1:0"])
        .args(["--log-format", "json", "--api-timeout", "1s"])
        .arg("--log-file")
        .arg(&log)
        .arg("--tart-program")
        .arg(FAKE_TART)
        .arg("--tart-home")
        .arg(home.path())
        .arg("--vm-log-dir")
        .arg(dir.path().join("vm-logs"))
        .env_remove("KUBECONFIG")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let pid = nix::unistd::Pid::from_raw(child.id().unwrap() as i32);
    // Wait for the start line and for a warning about the unreachable API server.
    let lines = wait_for(Duration::from_secs(30), || async {
        let text = std::fs::read_to_string(&log).ok()?;
        let has = |level: &str| text.contains(&format!("\"level\":\"{level}\""));
        (has("INFO") && has("WARN")).then_some(text)
    })
    .await
    .unwrap_or_else(|e| {
        panic!(
            "no INFO and WARN lines in {}: {e}: {:?}",
            log.display(),
            std::fs::read_to_string(&log)
        )
    });
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let out = tokio::time::timeout(Duration::from_secs(10), child.wait_with_output())
        .await
        .expect("agent exits within 10 s of SIGTERM")
        .unwrap();
    for line in lines.lines().filter(|l| !l.trim().is_empty()) {
        let v: serde_json::Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("not one JSON object per line ({e}): {line}"));
        assert!(
            v["level"].is_string() && v["timestamp"].is_string(),
            "{line}"
        );
    }
    assert!(lines.contains("starting tart-kubelet"), "{lines}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("\"level\":\"INFO\""),
        "info lines on stderr although a log file is set:\n{stderr}"
    );
    assert!(
        stderr.contains("\"level\":\"WARN\"") || stderr.contains("\"level\":\"ERROR\""),
        "warnings belong on stderr too (launchd's StandardErrorPath):\n{stderr}"
    );
}
