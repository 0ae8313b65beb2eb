//! End to end: a real Prometheus (Debian's `prometheus`) configured like kube-prometheus-stack's
//! kubelet job scrapes a Mac agent on the real control plane, with a ServiceAccount token bound
//! to the chart's Prometheus ClusterRole. The Node is discovered through the API server with that
//! token (by the test: Debian builds Prometheus without Kubernetes discovery, so the test reads
//! the Node as `role: node` discovery does and hands Prometheus the target in a file); each
//! kubelet path is its own scrape config over TLS (verified against the cluster CA) with the
//! chart's relabelings (`job="kubelet"`, `metrics_path` from the path, `node`), `honor_labels`
//! and `honor_timestamps`. Every path is up, and the "Compute Resources / Pod" CPU and memory
//! expressions (docs/metrics.md) return a series for the running Pod, kubelet's node series and
//! the agent's `process_*` come with `/metrics`, and the Pod's readiness probe is counted in
//! `prober_probe_total` on `/metrics/probes`.
//!
//! Run: `cargo test -p tart-kubelet-tests --test e2e stack_prometheus:: -- --nocapture`

use crate::pod_support;

use std::process::Stdio;

use pod_support::{Env, WAIT, phase};
use tart_kubelet_tests::{
    cluster::{testing::run_program, wait_for},
    fake::{GuestVitals, Knobs, VmKnob},
};

/// The paths the chart's kubelet ServiceMonitor scrapes, plus the resource path.
const PATHS: [&str; 4] = [
    "/metrics",
    "/metrics/cadvisor",
    "/metrics/probes",
    "/metrics/resource",
];

/// kube-prometheus-stack's Prometheus ClusterRole (`templates/prometheus/clusterrole.yaml`),
/// with the resource path added as the chart does when that endpoint is enabled.
const CLUSTER_ROLE: &str = r#"apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: NAME
rules:
- apiGroups: [""]
  resources: [nodes, nodes/metrics, services, endpoints, pods]
  verbs: [get, list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [get, list, watch]
- apiGroups: [networking.k8s.io]
  resources: [ingresses]
  verbs: [get, list, watch]
- nonResourceURLs: [/metrics, /metrics/cadvisor, /metrics/resource]
  verbs: [get]
"#;

/// One scrape config per kubelet path, as the operator renders the chart's ServiceMonitor
/// endpoints. Debian's Prometheus is built without Kubernetes service discovery, so the targets
/// come from a file the test writes from the Nodes as Prometheus' `role: node` discovery reads
/// them ([`node_targets`]); the rest is the chart's: TLS, the bearer token, the relabelings.
fn prometheus_config(token: &str, ca: &str, targets: &str) -> String {
    let mut out = String::from(
        "global:\n  scrape_interval: 2s\n  scrape_timeout: 2s\n  evaluation_interval: 2s\nscrape_configs:\n",
    );
    for (i, path) in PATHS.iter().enumerate() {
        out.push_str(&format!(
            r#"- job_name: serviceMonitor/kube-system/kubelet/{i}
  honor_labels: true
  honor_timestamps: true
  metrics_path: {path}
  scheme: https
  authorization:
    credentials_file: {token}
  tls_config:
    ca_file: {ca}
  file_sd_configs:
  - files: [{targets}]
  relabel_configs:
  - target_label: job
    replacement: kubelet
  - source_labels: [__meta_kubernetes_node_name]
    target_label: node
  - source_labels: [__metrics_path__]
    target_label: metrics_path
"#
        ));
    }
    out
}

/// Prometheus' `role: node` discovery of `node`, read through the API server with `token`:
/// the first InternalIP and the kubelet port from `status.daemonEndpoints`, labelled with the
/// Node's name.
async fn node_targets(env: &Env, token: &str, node: &str) -> serde_json::Value {
    let ca = env.cp.ca_cert_path().display().to_string();
    let (ok, out, err) = run_program(
        "kubectl",
        &[
            "--kubeconfig",
            "/dev/null",
            "--server",
            env.cp.server_url(),
            "--certificate-authority",
            &ca,
            "--token",
            token,
            "get",
            "node",
            node,
            "-o",
            "json",
        ],
    )
    .await;
    assert!(ok, "the Prometheus identity cannot read the Node: {err}");
    let n: serde_json::Value = serde_json::from_str(&out).unwrap();
    let ip = n["status"]["addresses"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["type"] == "InternalIP")
        .and_then(|a| a["address"].as_str())
        .expect("an InternalIP")
        .to_owned();
    let port = &n["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"];
    serde_json::json!([{
        "targets": [format!("{ip}:{port}")],
        "labels": {"__meta_kubernetes_node_name": node},
    }])
}

/// The result of an instant query: each series' labels and value.
async fn query(port: u16, promql: &str) -> Vec<(serde_json::Value, f64)> {
    let url = format!("http://127.0.0.1:{port}/api/v1/query");
    let q = format!("query={promql}");
    let (ok, out, _) = run_program(
        "curl",
        &["-s", "--max-time", "10", "-G", "--data-urlencode", &q, &url],
    )
    .await;
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_default();
    if !ok || v["status"] != "success" {
        return Vec::new();
    }
    v["data"]["result"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter_map(|r| {
            let value = r["value"][1].as_str()?.parse().ok()?;
            Some((r["metric"].clone(), value))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_configured_like_kube_prometheus_stack_scrapes_every_kubelet_path() {
    let knobs = Knobs::new().with_vm(
        "*",
        VmKnob {
            guest_vitals: Some(GuestVitals::default()),
            ..VmKnob::default().running_guest_launcher()
        },
    );
    let (env, _) = Env::with_kubelet_api("kps", knobs, &["--vitals-interval", "1s"]).await;
    let mut pod = env.pod("busy");
    let spec = pod.spec.as_mut().unwrap();
    spec.restart_policy = Some("Never".into());
    spec.containers[0].command = Some(vec!["/bin/sh".into(), "-c".into(), "sleep 600".into()]);
    // A probe, so /metrics/probes has kubelet's series for the Pod.
    spec.containers[0].readiness_probe = Some(
        serde_json::from_value(serde_json::json!({
            "exec": {"command": ["true"]}, "periodSeconds": 1}))
        .unwrap(),
    );
    env.create(&pod).await;
    env.wait_pod("busy", "Running", |p| phase(p) == "Running")
        .await;

    // The chart's Prometheus identity: a ServiceAccount bound to its ClusterRole.
    let role = format!("{}-prometheus", env.ns);
    env.kubectl_stdin(&["apply", "-f", "-"], &CLUSTER_ROLE.replace("NAME", &role))
        .await;
    let (ok, _, err) = env
        .kubectl(&["create", "serviceaccount", "prometheus"])
        .await;
    assert!(ok, "{err}");
    let sa = format!("{}:prometheus", env.ns);
    let (ok, _, err) = env
        .kubectl(&[
            "create",
            "clusterrolebinding",
            &role,
            "--clusterrole",
            &role,
            "--serviceaccount",
            &sa,
        ])
        .await;
    assert!(ok, "{err}");
    let (ok, token, err) = env.kubectl(&["create", "token", "prometheus"]).await;
    assert!(ok, "{err}");

    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, token.trim()).unwrap();
    let targets = dir.path().join("targets.json");
    let discovered = node_targets(&env, token.trim(), &env.node).await;
    std::fs::write(&targets, discovered.to_string()).unwrap();
    let config = dir.path().join("prometheus.yml");
    let ca = env.cp.ca_cert_path().display().to_string();
    std::fs::write(
        &config,
        prometheus_config(
            &token_file.display().to_string(),
            &ca,
            &targets.display().to_string(),
        ),
    )
    .unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let log = std::fs::File::create(dir.path().join("prometheus.log")).unwrap();
    let mut prometheus = tokio::process::Command::new("/usr/bin/prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.path().join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .kill_on_drop(true)
        .spawn()
        .expect("prometheus: install Debian's `prometheus` package (tests/cluster/build.sh does)");
    let prom_log =
        || std::fs::read_to_string(dir.path().join("prometheus.log")).unwrap_or_default();

    // Every path of the Mac is a target that is up.
    let up = format!("up{{job=\"kubelet\", node=\"{}\"}}", env.node);
    let targets = wait_for(WAIT, || async {
        let r = query(port, &up).await;
        (r.len() == PATHS.len() && r.iter().all(|(_, v)| *v == 1.0)).then_some(r)
    })
    .await;
    let Ok(targets) = targets else {
        let url = format!("http://127.0.0.1:{port}/api/v1/targets");
        let (_, t, _) = run_program("curl", &["-s", "--max-time", "10", &url]).await;
        panic!(
            "not every kubelet path is up\ntargets: {t}\nprometheus ({:?}) log:\n{}\nagent log:\n{}",
            prometheus.try_wait(),
            prom_log(),
            env.agent_log()
        );
    };
    let mut paths: Vec<&str> = targets
        .iter()
        .filter_map(|(m, _)| m["metrics_path"].as_str())
        .collect();
    paths.sort_unstable();
    assert_eq!(paths, PATHS);

    // The "Compute Resources / Pod" CPU and memory panels (docs/metrics.md).
    let sel = format!(
        "job=\"kubelet\", metrics_path=\"/metrics/cadvisor\", namespace=\"{}\", pod=\"busy\"",
        env.ns
    );
    let cpu = format!(
        "sum by (container) (rate(container_cpu_usage_seconds_total{{{sel}, image!=\"\"}}[5m]))"
    );
    let memory = format!(
        "sum by (container) (container_memory_working_set_bytes{{{sel}, container!=\"\", image!=\"\"}})"
    );
    for (panel, promql) in [("CPU", &cpu), ("memory", &memory)] {
        let r = wait_for(WAIT, || async {
            let r = query(port, promql).await;
            (r.len() == 1).then_some(r)
        })
        .await
        .unwrap_or_else(|_| panic!("the {panel} panel has no series: {promql}\n{}", prom_log()));
        assert_eq!(r[0].0["container"], "vm", "{r:?}");
        assert!(r[0].1 >= 0.0, "{r:?}");
    }
    let memory = query(port, &memory).await;
    assert!(memory[0].1 > 0.0, "{memory:?}");

    // kubelet's node series and the agent's own, on the same target.
    let node_name = query(
        port,
        &format!(
            "kubelet_node_name{{node=\"{}\", metrics_path=\"/metrics\"}}",
            env.node
        ),
    )
    .await;
    assert_eq!(node_name.len(), 1, "{node_name:?}");
    let process = query(
        port,
        &format!(
            "process_resident_memory_bytes{{job=\"kubelet\", node=\"{}\"}}",
            env.node
        ),
    )
    .await;
    assert!(
        process.first().is_some_and(|(_, v)| *v > 0.0),
        "{process:?}"
    );

    // kubelet's prober series, with the Pod's labels kept over the target's (honor_labels).
    let probes = format!(
        "prober_probe_total{{job=\"kubelet\", metrics_path=\"/metrics/probes\", namespace=\"{}\", pod=\"busy\", probe_type=\"Readiness\", result=\"successful\"}}",
        env.ns
    );
    let counted = wait_for(WAIT, || async {
        let r = query(port, &probes).await;
        r.first().is_some_and(|(_, v)| *v > 0.0).then_some(r)
    })
    .await;
    assert!(counted.is_ok(), "no {probes}\n{}", prom_log());

    let _ = env
        .kubectl(&["delete", "clusterrolebinding,clusterrole", &role])
        .await;
}
