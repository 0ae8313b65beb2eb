//! monitoring/: the alert rules pass `promtool check rules` and their unit tests
//! (`promtool test rules`), the Grafana dashboard parses and every query in it is valid
//! PromQL, and every metric named in the rules, the dashboard and docs/metrics.md is one of
//! the agreed metric names the agent exports.
use std::path::{Path, PathBuf};
use std::process::Command;

/// The agreed metric names (common brief, "Agreed metric names"), with their types.
const AGREED: &[(&str, &str)] = &[
    ("tart_kubelet_build_info", "gauge"),
    ("tart_kubelet_node_lease_renewals_total", "counter"),
    (
        "tart_kubelet_node_lease_renew_duration_seconds",
        "histogram",
    ),
    ("tart_kubelet_node_status_updates_total", "counter"),
    ("tart_kubelet_node_condition", "gauge"),
    ("tart_kubelet_vm_slots", "gauge"),
    ("tart_kubelet_vm_slots_used", "gauge"),
    ("tart_kubelet_tart_home_free_bytes", "gauge"),
    ("tart_kubelet_api_errors_total", "counter"),
    ("tart_kubelet_serving_csr_pending_since_seconds", "gauge"),
    ("tart_kubelet_pod_provision_delay_seconds", "histogram"),
    ("tart_kubelet_pod_agent_overhead_seconds", "histogram"),
    ("tart_kubelet_vm_boot_duration_seconds", "histogram"),
    ("tart_kubelet_pod_stage_duration_seconds", "histogram"),
    ("tart_kubelet_tart_commands_total", "counter"),
    ("tart_kubelet_tart_command_duration_seconds", "histogram"),
    ("tart_kubelet_tart_retries_total", "counter"),
    ("tart_kubelet_tart_kills_total", "counter"),
    ("tart_kubelet_tart_errors_total", "counter"),
    ("tart_kubelet_host_faults_total", "counter"),
    ("tart_kubelet_pods_pending", "gauge"),
    ("tart_kubelet_vms", "gauge"),
    ("tart_kubelet_reconciles_total", "counter"),
    ("tart_kubelet_reconcile_duration_seconds", "histogram"),
    ("tart_kubelet_reconcile_errors_total", "counter"),
    ("tart_kubelet_pod_admission_rejections_total", "counter"),
    ("tart_kubelet_pod_starts_total", "counter"),
    ("tart_kubelet_vm_exits_total", "counter"),
    ("tart_kubelet_guest_config_errors_total", "counter"),
    ("tart_kubelet_guest_volume_updates_total", "counter"),
    ("tart_kubelet_probe_results_total", "counter"),
    ("tart_kubelet_pod_termination_seconds", "histogram"),
    ("tart_kubelet_guest_launchers_total", "counter"),
    ("tart_kubelet_guest_launcher_wait_seconds", "histogram"),
    ("tart_kubelet_exec_sessions_total", "counter"),
    ("tart_kubelet_kubelet_api_limited_total", "counter"),
    ("tart_kubelet_exec_session_seconds", "histogram"),
    ("tart_kubelet_exec_setup_seconds", "histogram"),
    ("tart_kubelet_golden_bases_total", "counter"),
    ("tart_kubelet_image_evictions_total", "counter"),
    ("tart_kubelet_image_evicted_bytes_total", "counter"),
    ("tart_kubelet_image_cache_bytes", "gauge"),
    ("tart_kubelet_image_cache_digests", "gauge"),
    ("tart_kubelet_image_pulls_in_flight", "gauge"),
    ("tart_kubelet_image_pull_duration_seconds", "histogram"),
    ("tart_kubelet_image_pull_bytes_total", "counter"),
    ("tart_kubelet_prepull_token_waits_total", "counter"),
    ("tart_kubelet_prepull_images", "gauge"),
    ("tart_kubelet_host_check_failing", "gauge"),
    ("tart_kubelet_node_quarantined", "gauge"),
    ("tart_kubelet_node_quarantines_total", "counter"),
    ("tart_kubelet_host_memory_pressure_level", "gauge"),
    ("tart_kubelet_host_memory_free_percent", "gauge"),
    ("tart_kubelet_host_swap_used_bytes", "gauge"),
    ("tart_kubelet_vms_cpu_usage_cores", "gauge"),
    ("tart_kubelet_vms_memory_resident_bytes", "gauge"),
    ("tart_kubelet_vitals_samples_total", "counter"),
    ("tart_kubelet_vm_deaths_total", "counter"),
    (
        "tart_kubelet_client_certificate_expiration_timestamp_seconds",
        "gauge",
    ),
    (
        "tart_kubelet_client_certificate_renew_errors_total",
        "counter",
    ),
];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn promtool() -> PathBuf {
    let p = PathBuf::from("/usr/bin/promtool");
    assert!(
        p.exists(),
        "promtool not found: install Debian's `prometheus` package (tests/cluster/build.sh does)"
    );
    p
}

/// Every `tart_kubelet_*` identifier in `text`, with histogram series suffixes folded onto
/// their family name.
fn metric_names(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let b = text.as_bytes();
    let mut i = 0;
    while let Some(off) = text[i..].find("tart_kubelet_") {
        let start = i + off;
        let boundary =
            start == 0 || !(b[start - 1].is_ascii_alphanumeric() || b[start - 1] == b'_');
        let mut end = start;
        while end < b.len()
            && (b[end].is_ascii_lowercase() || b[end].is_ascii_digit() || b[end] == b'_')
        {
            end += 1;
        }
        // A bare `tart_kubelet_` is prose about the prefix, not a metric.
        if boundary && end > start + "tart_kubelet_".len() {
            let name = &text[start..end];
            let folded = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|s| {
                    let base = name.strip_suffix(s)?;
                    AGREED
                        .iter()
                        .any(|(n, t)| *n == base && *t == "histogram")
                        .then_some(base)
                })
                .unwrap_or(name);
            out.push(folded.to_string());
        }
        i = end.max(start + 1);
    }
    out.sort();
    out.dedup();
    out
}

fn assert_all_agreed(what: &str, names: &[String]) {
    let unknown: Vec<_> = names
        .iter()
        .filter(|n| !AGREED.iter().any(|(a, _)| a == n))
        .collect();
    assert!(
        unknown.is_empty(),
        "{what} uses metrics that are not agreed/exported: {unknown:?}"
    );
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().expect("spawn");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{cmd:?} failed:\n{text}");
    text
}

#[test]
fn alert_rules_pass_promtool_check() {
    let out = run(Command::new(promtool())
        .args(["check", "rules", "alerts.yaml"])
        .current_dir(repo().join("monitoring")));
    assert!(out.contains("SUCCESS"), "{out}");
}

#[test]
fn alert_rule_unit_tests_pass_promtool_test() {
    let out = run(Command::new(promtool())
        .args(["test", "rules", "alerts_test.yaml"])
        .current_dir(repo().join("monitoring")));
    assert!(out.contains("SUCCESS"), "{out}");
}

#[test]
fn alert_rules_cover_every_required_situation() {
    let rules = std::fs::read_to_string(repo().join("monitoring/alerts.yaml")).unwrap();
    for needle in [
        r#"tart_kubelet_pods_pending{age=~"15m_1h|1h_4h|gt_4h"}"#,
        r#"outcome=~"timeout|stalled""#,
        r#"tart_kubelet_node_lease_renewals_total{outcome="error"}"#,
        r#"tart_kubelet_host_faults_total{kind="vm_limit"}"#,
        r#"condition="DiskPressure""#,
        r#"up{job="tart-kubelet"} == 0"#,
        "tart_kubelet_node_quarantined == 1",
        "tart_kubelet_host_check_failing",
        r#"tart_kubelet_vm_deaths_total{cause=~"host_memory_pressure|host_fault"}"#,
        "tart_kubelet_host_memory_pressure_level) == 4",
        "tart_kubelet_client_certificate_expiration_timestamp_seconds - time() < 7 * 86400",
    ] {
        assert!(rules.contains(needle), "alerts.yaml lacks {needle}");
    }
    assert_all_agreed("alerts.yaml", &metric_names(&rules));
}

#[test]
fn every_alert_has_a_runbook_section() {
    let rules = std::fs::read_to_string(repo().join("monitoring/alerts.yaml")).unwrap();
    let runbook = std::fs::read_to_string(repo().join("docs/operations.md")).unwrap();
    let alerts: Vec<&str> = rules
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- alert: "))
        .collect();
    assert!(alerts.len() >= 6, "{alerts:?}");
    for a in alerts {
        assert!(
            runbook.contains(&format!("### {a}")),
            "docs/operations.md has no `### {a}`"
        );
        let url = format!("runbook_url: \"{RUNBOOK_BASE}#{}\"", a.to_lowercase());
        assert!(rules.contains(&url), "alert {a} has no `{url}`");
    }
    assert_eq!(
        rules.matches("runbook_url: ").count(),
        rules.matches("- alert: ").count(),
        "one runbook_url per alert"
    );
    assert!(
        !rules.contains("runbook: "),
        "the annotation is `runbook_url`"
    );
}

/// The base of every alert's `runbook_url` in `monitoring/alerts.yaml`: the project's
/// docs/operations.md (the `repository` of the workspace's Cargo.toml).
const RUNBOOK_BASE: &str = "https://example.invalid/tart-kubelet/blob/main/docs/operations.md";

#[test]
fn runbook_base_moves_every_runbook_url_and_the_rules_stay_valid() {
    let script = repo().join("monitoring/runbook-base");
    let base = "https://wiki.example.internal/macs/runbook";
    let out = Command::new(&script).arg(base).output().expect("spawn");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let moved = String::from_utf8(out.stdout).unwrap();
    let rules = std::fs::read_to_string(repo().join("monitoring/alerts.yaml")).unwrap();
    assert_eq!(
        moved
            .matches(&format!("runbook_url: \"{base}#tartkubelet"))
            .count(),
        rules.matches("- alert: ").count(),
        "{moved}"
    );
    assert!(!moved.contains(RUNBOOK_BASE), "{moved}");
    assert_eq!(
        moved.replace(base, RUNBOOK_BASE),
        rules,
        "only the base changes"
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("alerts.yaml"), &moved).unwrap();
    let check = run(Command::new(promtool())
        .args(["check", "rules", "alerts.yaml"])
        .current_dir(dir.path()));
    assert!(check.contains("SUCCESS"), "{check}");
    for bad in [
        "wiki.example.internal/runbook",
        "https://x/a b",
        "https://x/#a",
    ] {
        let out = Command::new(&script).arg(bad).output().expect("spawn");
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("the base URL"), "{bad}: {err}");
    }
}

/// Pulls every `expr` out of the dashboard's panels.
fn dashboard_exprs() -> Vec<String> {
    let text =
        std::fs::read_to_string(repo().join("monitoring/grafana/tart-kubelet.json")).unwrap();
    let dash: serde_json::Value = serde_json::from_str(&text).expect("dashboard is valid JSON");
    assert_eq!(dash["uid"], "tart-kubelet");
    let mut exprs = Vec::new();
    for p in dash["panels"].as_array().expect("panels") {
        for t in p["targets"].as_array().into_iter().flatten() {
            exprs.push(t["expr"].as_str().expect("expr").to_string());
        }
    }
    exprs
}

#[test]
fn dashboard_uses_only_agreed_metrics() {
    let exprs = dashboard_exprs();
    assert!(exprs.len() >= 20, "only {} queries", exprs.len());
    let names = metric_names(&exprs.join("\n"));
    assert_all_agreed("the dashboard", &names);
    // The two histograms SRE dashboards already query must be on it.
    for must in [
        "tart_kubelet_pod_provision_delay_seconds",
        "tart_kubelet_vm_boot_duration_seconds",
    ] {
        assert!(names.iter().any(|n| n == must), "dashboard lacks {must}");
    }
}

#[test]
fn every_dashboard_query_is_scoped_to_one_cluster() {
    let text =
        std::fs::read_to_string(repo().join("monitoring/grafana/tart-kubelet.json")).unwrap();
    let dash: serde_json::Value = serde_json::from_str(&text).unwrap();
    let vars = dash["templating"]["list"].as_array().unwrap();
    let cluster = vars.iter().find(|v| v["name"] == "cluster");
    assert!(cluster.is_some(), "no cluster variable: fleets would alias");
    let instance = vars.iter().find(|v| v["name"] == "instance").unwrap();
    assert!(
        instance["query"]["query"]
            .as_str()
            .unwrap()
            .contains(r#"cluster=~"$cluster""#),
        "the Mac list is not scoped to the cluster"
    );
    for e in dashboard_exprs() {
        // Every selector of a tart-kubelet series (and `up`) carries the cluster matcher.
        let selectors = e.matches("tart_kubelet_").count().max(1);
        let scoped = e.matches(r#"cluster=~"$cluster""#).count();
        assert!(scoped >= selectors, "a selector without the cluster: {e}");
    }
}

#[test]
fn dashboard_queries_are_valid_promql() {
    // promtool has no offline expression checker, so wrap every query in a recording rule
    // (Grafana's variables replaced by concrete values) and let `check rules` parse them.
    let dir = tempfile::tempdir().unwrap();
    let mut rules = String::from("groups:\n  - name: dashboard\n    rules:\n");
    for (i, e) in dashboard_exprs().iter().enumerate() {
        let e = e
            .replace("$__rate_interval", "5m")
            .replace("$instance", ".*")
            .replace("$cluster", ".*")
            .replace('\'', "''");
        rules.push_str(&format!(
            "      - record: dashboard:q{i}\n        expr: '{e}'\n"
        ));
    }
    let path = dir.path().join("dashboard_rules.yaml");
    std::fs::write(&path, rules).unwrap();
    let out = run(Command::new(promtool())
        .arg("check")
        .arg("rules")
        .arg(&path));
    assert!(out.contains("SUCCESS"), "{out}");
}

#[test]
fn metrics_reference_documents_every_agreed_metric_with_its_type() {
    let doc = std::fs::read_to_string(repo().join("docs/metrics.md")).unwrap();
    for (name, ty) in AGREED {
        let line = doc
            .lines()
            .find(|l| l.contains(&format!("`{name}`")))
            .unwrap_or_else(|| panic!("docs/metrics.md does not document {name}"));
        assert!(
            line.contains(ty),
            "docs/metrics.md: {name} is not described as a {ty}: {line}"
        );
    }
    assert_all_agreed("docs/metrics.md", &metric_names(&doc));
}

#[test]
fn dashboard_has_the_host_readiness_and_vitals_rows() {
    let names = metric_names(&dashboard_exprs().join("\n"));
    for must in [
        "tart_kubelet_host_check_failing",
        "tart_kubelet_node_quarantined",
        "tart_kubelet_node_quarantines_total",
        "tart_kubelet_vm_deaths_total",
        "tart_kubelet_host_memory_pressure_level",
        "tart_kubelet_host_memory_free_percent",
        "tart_kubelet_host_swap_used_bytes",
        "tart_kubelet_vms_cpu_usage_cores",
        "tart_kubelet_vms_memory_resident_bytes",
        "tart_kubelet_vitals_samples_total",
    ] {
        assert!(names.iter().any(|n| n == must), "dashboard lacks {must}");
    }
}

#[test]
fn metric_name_scanner_folds_histogram_suffixes_only() {
    let names = metric_names(
        "rate(tart_kubelet_vm_boot_duration_seconds_bucket[5m]) tart_kubelet_tart_commands_total x_tart_kubelet_no",
    );
    assert_eq!(
        names,
        vec![
            "tart_kubelet_tart_commands_total".to_string(),
            "tart_kubelet_vm_boot_duration_seconds".to_string()
        ]
    );
}
