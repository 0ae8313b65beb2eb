//! Every metric the alert rules and the Grafana dashboard query is exported by a running agent:
//! start `agent-under-test` (fake-tart, the real control plane), scrape its /metrics, and
//! look for each family's `# TYPE` line.
use std::path::{Path, PathBuf};
use std::time::Duration;

use tart_kubelet_tests::cluster::{ControlPlane, unique, wait_for};
use tart_kubelet_tests::fake::FakeHome;

/// The Accept header Prometheus sends when scraping.
const PROMETHEUS_ACCEPT: &str = "Accept: application/openmetrics-text;version=1.0.0;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

/// Families with no series until the first error; checked by registration instead.
const LAZY_FAMILIES: &[&str] = &[
    "tart_kubelet_tart_errors_total",
    "tart_kubelet_reconcile_errors_total",
];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Metric family names used in `text` (histogram series suffixes folded).
fn used_families(text: &str, histograms: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("tart_kubelet_") {
        let tail = &rest[i..];
        let end = tail
            .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'))
            .unwrap_or(tail.len());
        let name = &tail[..end];
        let name = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| name.strip_suffix(s).filter(|b| histograms.contains(b)))
            .unwrap_or(name);
        if name.len() > "tart_kubelet_".len() && !out.iter().any(|n| n == name) {
            out.push(name.to_string());
        }
        rest = &tail[end.max(1)..];
    }
    out
}

async fn scrape(url: &str) -> Option<String> {
    // A plain HTTP/1.1 GET with `Connection: close`: no HTTP client crate needed for one
    // request on loopback.
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let addr = url.strip_prefix("http://")?.split('/').next()?.to_string();
    let mut s = tokio::net::TcpStream::connect(&addr).await.ok()?;
    s.write_all(
        format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{PROMETHEUS_ACCEPT}\r\n\r\n").as_bytes(),
    )
    .await
    .ok()?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).await.ok()?;
    let text = String::from_utf8_lossy(&buf).into_owned();
    text.lines()
        .next()
        .is_some_and(|status| status.contains(" 200 "))
        .then_some(text)
}

#[tokio::test(flavor = "multi_thread")]
async fn every_metric_in_the_rules_and_dashboard_is_served_by_a_running_agent() {
    let cp = ControlPlane::shared();
    let home = FakeHome::new().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let node = unique("metrics-live");
    let logs = tempfile::tempdir().unwrap();
    let mut agent = tokio::process::Command::new(env!("CARGO_BIN_EXE_agent-under-test"))
        .arg("--kubeconfig")
        .arg(cp.kubeconfig_path())
        .args(["--node-name", &node])
        .arg("--tart-program")
        .arg(env!("CARGO_BIN_EXE_fake-tart"))
        .arg("--tart-home")
        .arg(home.path())
        .arg("--vm-log-dir")
        .arg(logs.path())
        .arg("--cert-dir")
        .arg(logs.path().join("pki"))
        .args(["--admin-addr", &format!("127.0.0.1:{port}")])
        .env("CI", "1")
        .stderr(std::fs::File::create(logs.path().join("agent.stderr")).unwrap())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let url = format!("http://127.0.0.1:{port}/metrics");
    // Wait until the node side has published its first status (build info carries the tart
    // version, known once `tart --version` ran).
    let body = wait_for(Duration::from_secs(60), || async {
        scrape(&url).await.filter(|b| {
            b.contains("tart_kubelet_build_info{") && b.contains("tart_kubelet_vm_slots ")
        })
    })
    .await;
    let _ = agent.start_kill();
    let body = body.unwrap_or_else(|e| {
        panic!(
            "the agent did not serve /metrics with build info: {e}\nlast scrape:\n{}\nagent stderr:\n{}",
            futures::executor::block_on(scrape(&url)).unwrap_or_default(),
            std::fs::read_to_string(logs.path().join("agent.stderr")).unwrap_or_default()
        )
    });

    let rules = std::fs::read_to_string(repo().join("monitoring/alerts.yaml")).unwrap();
    let dash =
        std::fs::read_to_string(repo().join("monitoring/grafana/tart-kubelet.json")).unwrap();
    let histograms: Vec<&str> = body
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE ")?.strip_suffix(" histogram"))
        .collect();
    let pod_metrics =
        std::fs::read_to_string(repo().join("agent/src/pods/metrics/mod.rs")).unwrap();
    let mut missing = Vec::new();
    for name in used_families(&format!("{rules}\n{dash}"), &histograms) {
        // OpenMetrics names a counter family without `_total` in its TYPE line; the classic
        // text format (served without an OpenMetrics Accept header) keeps it.
        let family = name.strip_suffix("_total").unwrap_or(&name);
        if body.contains(&format!("# TYPE {family} ")) || body.contains(&format!("# TYPE {name} "))
        {
            continue;
        }
        // prometheus-client omits a family with no series; these two get their first series
        // with the first error (their label space is not pre-registered). Require at least
        // that the agent registers them.
        let short = family.trim_start_matches("tart_kubelet_");
        let lazy =
            LAZY_FAMILIES.contains(&name.as_str()) && pod_metrics.contains(&format!("\"{short}\""));
        if !lazy {
            missing.push(name);
        }
    }
    assert!(
        missing.is_empty(),
        "not served by the agent: {missing:?}\n--- /metrics ---\n{body}"
    );
}
