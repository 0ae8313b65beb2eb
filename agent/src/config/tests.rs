use std::time::Duration;

use clap::Parser;

use super::*;
use crate::cli::{Cli, Command};
use std::path::PathBuf;

fn host() -> HostDefaults {
    HostDefaults {
        hostname: "mini-1".into(),
        home: PathBuf::from("/Users/ci"),
    }
}

fn try_parse(argv: &[&str]) -> Result<RunArgs, clap::Error> {
    let cli = Cli::try_parse_from(std::iter::once("tart-kubelet").chain(argv.iter().copied()))?;
    Ok(match cli.command {
        None => cli.run,
        Some(Command::Run(a)) => *a,
        Some(other) => panic!("unexpected subcommand {other:?}"),
    })
}

fn parse(argv: &[&str]) -> RunArgs {
    try_parse(argv).expect("argv parses")
}

fn resolve(argv: &[&str]) -> Result<Config, ConfigError> {
    Config::resolve(parse(argv), &host())
}

/// The message of a value rejected by clap (one setting alone) or by `resolve` (across
/// settings).
fn err(argv: &[&str]) -> String {
    match try_parse(argv) {
        Err(e) => e.to_string(),
        Ok(a) => Config::resolve(a, &host())
            .expect_err("must be rejected")
            .to_string(),
    }
}

fn from_file(toml: &str) -> Result<RunArgs, toml::de::Error> {
    toml::from_str(toml)
}

#[test]
fn defaults_follow_kubelet_conventions() {
    let c = resolve(&[]).unwrap();
    assert_eq!(c.node_name, "mini-1");
    assert_eq!(c.tart_home, PathBuf::from("/Users/ci/.tart"));
    assert_eq!(c.tart_program, PathBuf::from("tart"));
    assert_eq!(c.vm_slots, 2);
    assert_eq!(c.lease_duration, Duration::from_secs(40));
    assert_eq!(c.lease_renew_interval, Duration::from_secs(10));
    assert_eq!(c.admin_addr.to_string(), "127.0.0.1:10255");
    let t = c.taint.clone().unwrap();
    assert_eq!(
        (t.key.as_str(), t.value.as_str(), t.effect.as_str()),
        ("virtual-kubelet.io/provider", "tart", "NoSchedule")
    );
    assert_eq!(c.memory_reserve_bytes, 4 << 30);
    assert_eq!(c.log_format, LogFormat::Text);
    assert_eq!(c.pull_credentials, PullCredentials::PodSecrets);
    // kubelet's streamingConnectionIdleTimeout; the kubelet port's other limits as documented.
    assert_eq!(
        c.kubelet_api_limits.streaming_idle,
        Duration::from_secs(4 * 3600)
    );
    assert_eq!(c.kubelet_api_limits, Limits::default());
}

#[test]
fn run_subcommand_and_bare_flags_are_the_same() {
    assert_eq!(
        parse(&["run", "--vm-slots", "1"]),
        parse(&["--vm-slots", "1"])
    );
}

#[test]
fn flags_override_the_file_and_the_file_overrides_defaults() {
    let file = from_file(
        r#"
        node_name = "from-file"
        vm_slots = 1
        node_labels = ["tart.run/pool=ci"]
        lease_duration = "60s"
        "#,
    )
    .unwrap();
    let merged = parse(&["--node-name", "from-flag"]).or(file);
    let c = Config::resolve(merged, &host()).unwrap();
    assert_eq!(c.node_name, "from-flag");
    assert_eq!(c.vm_slots, 1);
    assert_eq!(c.lease_duration, Duration::from_secs(60));
    assert_eq!(
        c.node_labels.get("tart.run/pool").map(String::as_str),
        Some("ci")
    );
}

#[test]
fn unknown_file_keys_are_rejected() {
    let e = from_file("vm_slotz = 3").unwrap_err();
    assert!(e.to_string().contains("vm_slotz"), "{e}");
}

#[test]
fn bad_values_name_the_setting() {
    for (argv, says) in [
        (&["--node-name", "Mini_1"][..], "--node-name"),
        (&["--vm-slots", "0"][..], "--vm-slots"),
        (&["--vm-slots", "4", "--max-pods", "3"][..], "--max-pods"),
        (&["--cpu", "0"][..], "--cpu"),
        (&["--lease-renew-interval", "30s"][..], "at most half"),
        (&["--lease-duration", "forever"][..], "--lease-duration"),
        (&["--memory-reserve", "4GB"][..], "--memory-reserve"),
        (
            &["--disk-pressure-free", "100%"][..],
            "--disk-pressure-free",
        ),
        (&["--taint", "a=b:Maybe"][..], "--taint"),
        (&["--log-format", "xml"][..], "--log-format"),
        (&["--log-format", "xml"][..], "json, text"),
        (&["--pull-credentials", "vault"][..], "pod-secrets, host"),
        (&["--admin-addr", "localhost"][..], "--admin-addr"),
        (&["--tart-deadline", "teleport=1m"][..], "not a tart op"),
        (&["--tart-attempts", "0"][..], "--tart-attempts"),
        (&["--vm-name-prefix=-x"][..], "--vm-name-prefix"),
        (&["--pod-concurrency", "0"][..], "--pod-concurrency"),
        (&["--api-timeout", "40s"][..], "--api-timeout"),
        (
            &["--kubelet-api-header-timeout", "0s"][..],
            "--kubelet-api-header-timeout",
        ),
        (
            &["--kubelet-api-max-streams", "0"][..],
            "--kubelet-api-max-streams",
        ),
        (
            &["--streaming-connection-idle-timeout", "0s"][..],
            "--streaming-connection-idle-timeout",
        ),
        (&["--min-tart-version", "2.x"][..], "--min-tart-version"),
        (
            &["--node-status-report-interval", "5s"][..],
            "--node-status-report-interval",
        ),
    ] {
        let e = err(argv);
        assert!(e.contains(says), "{argv:?}: {e}");
    }
}

#[test]
fn huge_durations_are_rejected_not_wrapped() {
    assert!(err(&["--ip-wait", "9999999999999h"]).contains("too large"));
    assert!(err(&["--tart-deadline", "pull=99999999999999999999s"]).contains("too large"));
    let e = from_file("lease_renew_interval = \"9999999999999h\"").unwrap_err();
    assert!(e.to_string().contains("too large"), "{e}");
}

#[test]
fn file_values_are_parsed_like_flags() {
    let file = from_file(
        r#"
        admin_addr = "0.0.0.0:9100"
        log_format = "json"
        pull_credentials = "host"
        taint = "none"
        memory_reserve = "2Gi"
        disk_pressure_free = "60Gi"
        tart_deadlines = ["pull=2h"]
        min_tart_version = "2.30.1"
        "#,
    )
    .unwrap();
    let c = Config::resolve(file, &host()).unwrap();
    assert_eq!(c.admin_addr.to_string(), "0.0.0.0:9100");
    assert_eq!(c.log_format, LogFormat::Json);
    assert_eq!(c.pull_credentials, PullCredentials::Host);
    assert_eq!(c.taint, None);
    assert_eq!(c.memory_reserve_bytes, 2 << 30);
    assert_eq!(c.disk_pressure, DiskThreshold::Bytes(60 << 30));
    assert_eq!(
        c.tart_deadlines.get(&tart::Op::Pull),
        Some(&Duration::from_secs(7200))
    );
    assert_eq!(c.min_tart_version, (2, 30, 1));
}

#[test]
fn bad_file_values_name_the_key_and_say_what_is_wrong() {
    for (toml, says) in [
        ("lease_duration = \"forever\"", "not a duration"),
        ("admin_addr = \"localhost\"", "not host:port"),
        ("log_format = \"xml\"", "json"),
        ("pull_credentials = \"vault\"", "pod-secrets"),
        ("node_labels = [\"kubernetes.io/role=x\"]", "namespace"),
        ("taint = \"a=b:Maybe\"", "effect"),
        ("tart_deadlines = [\"teleport=1m\"]", "not a tart op"),
        ("memory = \"4GB\"", "suffix"),
        ("min_tart_version = \"2.x\"", "MAJOR.MINOR.PATCH"),
    ] {
        let e = from_file(toml).unwrap_err().to_string();
        let key = toml.split(" = ").next().unwrap();
        assert!(e.contains(key) && e.contains(says), "{toml}: {e}");
    }
}

#[test]
fn operator_labels_cannot_claim_kubernetes_namespaces() {
    assert!(err(&["--node-label", "kubernetes.io/role=agent"]).contains("namespace"));
    assert!(err(&["--node-label", "node.kubernetes.io/x=y"]).contains("namespace"));
    let c = resolve(&["--node-label", "tart.run/pool=a,team=ios"]).unwrap();
    assert_eq!(c.node_labels.len(), 2);
}

#[test]
fn taint_can_be_disabled_and_deadlines_overridden() {
    let c = resolve(&["--taint", "none", "--tart-deadline", "clone=10m"]).unwrap();
    assert_eq!(c.taint, None);
    assert_eq!(
        c.tart_deadlines.get(&tart::Op::Clone),
        Some(&Duration::from_secs(600))
    );
}

#[test]
fn help_explains_every_option() {
    use clap::CommandFactory;
    let cmd = Cli::command();
    for arg in cmd.get_arguments() {
        let id = arg.get_id().as_str();
        if id == "help" || id == "version" {
            continue;
        }
        assert!(arg.get_help().is_some(), "--{id} has no help text");
    }
    assert!(cmd.find_subcommand("doctor").is_some());
}

#[test]
fn load_reads_the_config_file_and_reports_a_bad_one() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.toml");
    std::fs::write(&good, "vm_slots = 1\nnode_name = \"from-file\"\n").unwrap();
    let args = parse(&["--config", good.to_str().unwrap(), "--node-name", "flag"]);
    let c = Config::load(args, &host()).unwrap();
    assert_eq!((c.vm_slots, c.node_name.as_str()), (1, "flag"));

    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "vm_slots = \"two\"\n").unwrap();
    let e = Config::load(parse(&["--config", bad.to_str().unwrap()]), &host()).unwrap_err();
    assert!(matches!(e, ConfigError::ParseFile { .. }), "{e}");
    let missing = dir.path().join("missing.toml");
    let e = Config::load(parse(&["--config", missing.to_str().unwrap()]), &host()).unwrap_err();
    assert!(e.to_string().contains("cannot read config file"), "{e}");
}

#[test]
fn the_vm_naming_is_built_once_from_the_checked_prefix() {
    const UID: &str = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";
    let c = resolve(&["--vm-name-prefix=ci-"]).unwrap();
    assert_eq!(
        c.vm_naming.vm_name(UID).unwrap().as_str(),
        format!("ci-{UID}")
    );
    let e = resolve(&["--vm-name-prefix=seventeen-chars-x"]).unwrap_err();
    assert!(e.to_string().contains("--vm-name-prefix"), "{e}");
}

#[test]
fn the_bootstrap_kubeconfig_needs_the_node_identity_and_a_kubeconfig_to_write() {
    let boot = ["--bootstrap-kubeconfig", "/etc/tkl/bootstrap.kubeconfig"];
    for (extra, says) in [
        (
            &["--kubeconfig", "/etc/tkl/kubeconfig"][..],
            "needs --identity node",
        ),
        (&["--identity", "node"][..], "needs --kubeconfig"),
        (
            &[
                "--identity",
                "node",
                "--kubeconfig",
                "/etc/tkl/bootstrap.kubeconfig",
            ][..],
            "must differ from --kubeconfig",
        ),
    ] {
        let argv: Vec<&str> = boot.iter().chain(extra).copied().collect();
        let e = err(&argv);
        assert!(
            e.contains("--bootstrap-kubeconfig") && e.contains(says),
            "{argv:?}: {e}"
        );
    }
    let ok = resolve(&[
        "--bootstrap-kubeconfig",
        "/etc/tkl/bootstrap.kubeconfig",
        "--identity",
        "node",
        "--kubeconfig",
        "/etc/tkl/kubeconfig",
    ])
    .unwrap();
    assert_eq!(
        ok.bootstrap_kubeconfig.as_deref(),
        Some(std::path::Path::new("/etc/tkl/bootstrap.kubeconfig"))
    );
    let file = from_file("bootstrap_kubeconfig = \"/etc/tkl/b\"").unwrap();
    assert_eq!(file.bootstrap_kubeconfig, Some(PathBuf::from("/etc/tkl/b")));
    assert_eq!(resolve(&[]).unwrap().bootstrap_kubeconfig, None);
}
