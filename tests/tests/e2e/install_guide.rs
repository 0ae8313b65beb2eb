//! End-to-end: docs/install.md, followed as written on a control plane of its own, ends at a
//! Pod whose `kubectl logs` and `kubectl exec` answer.
//!
//! The guide marks each block this test runs with an HTML comment on the line before it:
//! `<!-- install-guide: cluster -->` for a shell block run on the operator's workstation, and
//! `<!-- install-guide: mac-config -->` for the agent's config file. The cluster blocks run
//! with bash (`set -euo pipefail`) and the real `kubectl`, as the cluster's administrator, in
//! the guide's order, each with the guide's variables block in front of it (one shell session,
//! as the reader's). The only values replaced are those the guide tells the reader to choose:
//! `node_ip` in the variables block and the config file (127.0.0.2: the API server runs on
//! this host, and an address other than the one the agent would find by itself proves the
//! config's `node_ip` is what the Node publishes and the serving certificate names), and the
//! console user's home `/Users/admin` in the config file (a temporary `HOME`). The blocks
//! before the config file run once each and must pass at the first try; the blocks after it
//! wait on the agent (its registration, its serving certificate request, the Pod), so each is
//! run again until it passes or its deadline ends.
//!
//! Between them the test does the Mac's part: it copies the kubeconfig the guide produced to
//! the path the config file names and starts the agent with that file (as the launchd job
//! does: `tart-kubelet --config <file>`). Skipped, because they are macOS host set-up with no
//! counterpart on this Linux host: installing Tart and the formula, auto-login, FileVault, the
//! DHCP lease, the Local Network permission, softnet, `tart-kubelet install` (launchd) and
//! `doctor`. Flags added on top of the file, each only because the test host is not the Mac:
//! `--tart-program`/`--tart-home` (fake-tart, whose guest runs the real guest launcher: a
//! stock image gets the launcher as docs/guest.md describes), `--kubelet-port` and
//! `--admin-addr` (free ports instead of 10250 and 10255, which another process may hold),
//! and the image GC thresholds every e2e agent gets (the build host's disk is not the Mac's).
//!
//! Run: `cargo test -p tart-kubelet-tests --test e2e install_guide:: -- --nocapture`

use std::{
    os::unix::fs::PermissionsExt as _,
    path::{Path, PathBuf},
    process::Stdio,
    time::Duration,
};

use k8s_openapi::api::core::v1::Node;
use kube::Api;
use tart_kubelet_tests::{
    agent::{free_port, http_get, sample},
    cluster::{ControlPlane, build, wait_for},
    fake::{FakeHome, Knobs, VmKnob, small_images},
};

/// The address the API server reaches the agent at in this test (see the module docs).
const NODE_IP: &str = "127.0.0.2";

/// Deadline of one run of one block.
const BLOCK_DEADLINE: Duration = Duration::from_secs(120);

/// How long a block after the agent's start may keep failing.
const SETTLE: Duration = Duration::from_secs(180);

/// One marked block of the guide.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Block {
    /// A shell block run on the workstation.
    Cluster(String),
    /// The agent's config file.
    MacConfig(String),
}

/// The marked blocks of `md`, in order: each marker comment is followed by a fenced block.
///
/// # Errors
/// A marker not followed by a fence, or of an unknown kind.
fn blocks(md: &str) -> Result<Vec<Block>, String> {
    let mut out = Vec::new();
    let mut lines = md.lines();
    while let Some(line) = lines.next() {
        let Some(kind) = line
            .trim()
            .strip_prefix("<!-- install-guide: ")
            .and_then(|r| r.strip_suffix(" -->"))
        else {
            continue;
        };
        if !lines.next().unwrap_or_default().starts_with("```") {
            return Err(format!("marker {kind:?} is not followed by a fenced block"));
        }
        let body: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
        let body = body.join("\n") + "\n";
        out.push(match kind {
            "cluster" => Block::Cluster(body),
            "mac-config" => Block::MacConfig(body),
            other => return Err(format!("unknown install-guide marker {other:?}")),
        });
    }
    Ok(out)
}

/// The guide's variables block with `node_ip` replaced; the guide's value must be there.
fn variables(block: &str) -> String {
    assert!(
        block.lines().any(|l| l.starts_with("node=mac-mini-01 "))
            && block.lines().any(|l| l.starts_with("node_ip=192.0.2.10 ")),
        "the first cluster block sets node and node_ip:\n{block}"
    );
    block.replace("node_ip=192.0.2.10 ", &format!("node_ip={NODE_IP} "))
}

/// The guide's config file with `node_ip` and the console user's home replaced.
fn config_file(block: &str, home: &Path) -> String {
    assert!(
        block.contains("\"192.0.2.10\"") && block.contains("/Users/admin/"),
        "the config file sets node_ip and paths in the console user's home:\n{block}"
    );
    block
        .replace("\"192.0.2.10\"", &format!("\"{NODE_IP}\""))
        .replace("/Users/admin/", &format!("{}/", home.display()))
}

/// Runs `script` with bash in `dir` as the cluster's administrator: (success, output).
async fn bash(cp: &ControlPlane, dir: &Path, script: &str) -> (bool, String) {
    let child = tokio::process::Command::new("bash")
        .args(["-euo", "pipefail", "-c", script])
        .current_dir(dir)
        .env("KUBECONFIG", cp.kubeconfig_path())
        .env("HOME", dir)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    match tokio::time::timeout(BLOCK_DEADLINE, child).await {
        Ok(Ok(out)) => (
            out.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        ),
        Ok(Err(e)) => (false, format!("spawning bash: {e}")),
        Err(_) => (false, format!("no exit within {BLOCK_DEADLINE:?}")),
    }
}

/// The agent started as the launchd job starts it, with the test host's additions.
fn start_agent(
    config: &Path,
    home: &Path,
    tart: &FakeHome,
    ports: (u16, u16),
) -> tokio::process::Child {
    let log = std::fs::File::create(home.join("agent.stdout")).expect("agent output file");
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_agent-under-test"));
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("TART_KUBELET_") {
            cmd.env_remove(k);
        }
    }
    cmd.arg("--config")
        .arg(config)
        .arg("--tart-program")
        .arg(env!("CARGO_BIN_EXE_fake-tart"))
        .arg("--tart-home")
        .arg(tart.path())
        .args(["--kubelet-port", &ports.0.to_string()])
        .args(["--admin-addr", &format!("127.0.0.1:{}", ports.1)])
        .args([
            "--image-gc-high-threshold",
            "100",
            "--image-gc-low-threshold",
            "100",
        ])
        .args(["--disk-pressure-free", "100Mi"])
        .env_remove("KUBECONFIG")
        .env("HOME", home)
        .env("CI", "1")
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("agent output"))
        .stderr(log)
        .kill_on_drop(true)
        .spawn()
        .expect("spawn the agent")
}

/// The agent's own log (the config's `log_file`) and its early output, for failure messages.
fn agent_log(home: &Path) -> String {
    let read = |p: PathBuf| std::fs::read_to_string(p).unwrap_or_default();
    let log = read(home.join("Library/Logs/tart-kubelet/tart-kubelet.log"));
    let lines: Vec<&str> = log.lines().collect();
    format!(
        "{}\n{}",
        read(home.join("agent.stdout")),
        lines[lines.len().saturating_sub(60)..].join("\n")
    )
}

/// `tart_kubelet_serving_csr_pending_since_seconds` as the agent exposes it now.
async fn pending_since(admin_port: u16) -> Option<f64> {
    let addr = format!("127.0.0.1:{admin_port}").parse().ok()?;
    let r = http_get(addr, "/metrics", None).await.ok()?;
    sample(&r.body, "tart_kubelet_serving_csr_pending_since_seconds")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn following_the_install_guide_ends_at_working_logs_and_exec() {
    let md =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/install.md"))
            .expect("docs/install.md");
    let all = blocks(&md).unwrap_or_else(|e| panic!("docs/install.md: {e}"));
    let config_at = all
        .iter()
        .position(|b| matches!(b, Block::MacConfig(_)))
        .expect("the guide has a mac-config block");
    let shell = |b: &Block| match b {
        Block::Cluster(s) => s.clone(),
        Block::MacConfig(_) => panic!("more than one mac-config block"),
    };
    let Some(Block::Cluster(first)) = all.first() else {
        panic!("the guide's first marked block is the cluster variables");
    };
    let vars = variables(first);
    let before: Vec<String> = all[1..config_at].iter().map(shell).collect();
    let after: Vec<String> = all[config_at + 1..].iter().map(shell).collect();
    let Block::MacConfig(config) = &all[config_at] else {
        unreachable!()
    };
    assert!(!before.is_empty() && !after.is_empty(), "{all:#?}");

    // A control plane of its own: nothing set up but what the guide does.
    tokio::task::spawn_blocking(build)
        .await
        .expect("build")
        .expect("build the control plane");
    let cp = tokio::task::spawn_blocking(|| ControlPlane::start_private("install"))
        .await
        .expect("start")
        .unwrap_or_else(|e| panic!("private control plane: {e:#}"));
    let workstation = tempfile::tempdir().expect("workstation dir");
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    std::os::unix::fs::symlink(repo.join("packaging"), workstation.path().join("packaging"))
        .expect("the release's packaging directory");

    for (i, block) in before.iter().enumerate() {
        let (ok, out) = bash(&cp, workstation.path(), &format!("{vars}{block}")).await;
        assert!(
            ok,
            "cluster block {} failed:\n{block}\n--- output:\n{out}",
            i + 1
        );
    }

    // The Mac's part: the kubeconfig where the config file names it, then the agent.
    let mac = tempfile::tempdir().expect("the console user's home");
    let kube_dir = mac.path().join(".kube");
    std::fs::create_dir_all(&kube_dir).expect(".kube");
    let kubeconfig = kube_dir.join("tart-kubelet.kubeconfig");
    std::fs::copy(
        workstation.path().join("mac-mini-01.kubeconfig"),
        &kubeconfig,
    )
    .expect("the guide produced mac-mini-01.kubeconfig");
    std::fs::set_permissions(&kubeconfig, std::fs::Permissions::from_mode(0o600)).expect("0600");
    let config_path = mac.path().join("config.toml");
    std::fs::write(&config_path, config_file(config, mac.path())).expect("config file");
    let tart = FakeHome::new().expect("fake home");
    let knobs = small_images(Knobs::new().with_latency_scale(0.001))
        .with_vm("*", VmKnob::default().running_guest_launcher());
    tart.set_knobs(&knobs).expect("knobs");
    let ports = (
        free_port().expect("port").port(),
        free_port().expect("port").port(),
    );
    let _agent = start_agent(&config_path, mac.path(), &tart, ports);

    // Until its request is approved the serving certificate's request waits, and says so.
    let pending = wait_for(SETTLE, || async {
        pending_since(ports.1).await.filter(|v| *v > 0.0)
    })
    .await;
    assert!(
        pending.is_ok(),
        "the pending serving request never showed in the metric; agent log:\n{}",
        agent_log(mac.path())
    );

    let mut outputs = Vec::new();
    for (i, block) in after.iter().enumerate() {
        let last = std::sync::Mutex::new(String::new());
        let r = wait_for(SETTLE, || async {
            let (ok, out) = bash(&cp, workstation.path(), &format!("{vars}{block}")).await;
            *last.lock().unwrap() = out.clone();
            ok.then_some(out)
        })
        .await;
        match r {
            Ok(out) => outputs.push(out),
            Err(e) => panic!(
                "cluster block {} (after the agent's start) never passed ({e}):\n{block}\n--- last output:\n{}\n--- agent log:\n{}",
                before.len() + i + 1,
                last.lock().unwrap(),
                agent_log(mac.path())
            ),
        }
    }
    let output = outputs.join("");

    // logs and exec answered, with what the guest printed and ran.
    let uname = |flags: &str| {
        let out = std::process::Command::new("uname")
            .arg(flags)
            .output()
            .expect("uname");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    assert!(
        output.contains(&format!("hello from {}", uname("-s"))),
        "kubectl logs gave no greeting:\n{output}"
    );
    assert!(
        output.lines().any(|l| l.trim() == uname("-sm")),
        "kubectl exec gave no `uname -sm`:\n{output}"
    );
    // The Node publishes the config's node_ip, and no request waits any more.
    let admin = cp.admin_client().await;
    let node = Api::<Node>::all(admin)
        .get("mac-mini-01")
        .await
        .expect("the Node");
    let addresses: Vec<(String, String)> = node
        .status
        .and_then(|s| s.addresses)
        .unwrap_or_default()
        .into_iter()
        .map(|a| (a.type_, a.address))
        .collect();
    assert_eq!(addresses, [("InternalIP".to_owned(), NODE_IP.to_owned())]);
    assert_eq!(pending_since(ports.1).await, Some(0.0));
}

#[test]
fn marked_blocks_are_read_in_order_and_a_lost_fence_is_an_error() {
    let md = "text\n<!-- install-guide: cluster -->\n```sh\na=1\necho $a\n```\n\n<!-- install-guide: mac-config -->\n```toml\nk = 1\n```\n```sh\nnot marked\n```\n";
    assert_eq!(
        blocks(md),
        Ok(vec![
            Block::Cluster("a=1\necho $a\n".into()),
            Block::MacConfig("k = 1\n".into())
        ])
    );
    assert!(blocks("<!-- install-guide: cluster -->\ntext\n").is_err());
    assert!(blocks("<!-- install-guide: mac -->\n```\nx\n```\n").is_err());
}
