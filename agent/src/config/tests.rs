use std::time::Duration;

use clap::Parser;

use super::*;

fn host() -> HostDefaults {
    HostDefaults {
        hostname: "mini-1".into(),
        home: PathBuf::from("/Users/ci"),
    }
}

fn parse(argv: &[&str]) -> RunArgs {
    let cli = Cli::try_parse_from(std::iter::once("tart-kubelet").chain(argv.iter().copied()))
        .expect("argv parses");
    match cli.command {
        None => cli.run,
        Some(Command::Run(a)) => *a,
        Some(other) => panic!("unexpected subcommand {other:?}"),
    }
}

fn resolve(argv: &[&str]) -> Result<Config, ConfigError> {
    Config::resolve(parse(argv), &host())
}

fn err(argv: &[&str]) -> String {
    resolve(argv).expect_err("must be rejected").to_string()
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
    let t = c.taint.unwrap();
    assert_eq!(
        (t.key.as_str(), t.value.as_str(), t.effect.as_str()),
        ("virtual-kubelet.io/provider", "tart", "NoSchedule")
    );
    assert_eq!(c.memory_reserve_bytes, 4 << 30);
    assert_eq!(c.log_format, LogFormat::Text);
    assert_eq!(c.pull_credentials, PullCredentials::PodSecrets);
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
    let file: RunArgs = toml::from_str(
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
    let e = toml::from_str::<RunArgs>("vm_slotz = 3").unwrap_err();
    assert!(e.to_string().contains("vm_slotz"), "{e}");
}

#[test]
fn bad_values_name_the_setting() {
    assert!(err(&["--node-name", "Mini_1"]).contains("--node-name"));
    assert!(err(&["--vm-slots", "0"]).contains("--vm-slots"));
    assert!(err(&["--lease-renew-interval", "30s"]).contains("at most half"));
    assert!(err(&["--lease-duration", "forever"]).contains("--lease-duration"));
    assert!(err(&["--memory-reserve", "4GB"]).contains("--memory-reserve"));
    assert!(err(&["--taint", "a=b:Maybe"]).contains("--taint"));
    assert!(err(&["--log-format", "xml"]).contains("json or text"));
    assert!(err(&["--admin-addr", "localhost"]).contains("--admin-addr"));
    assert!(err(&["--tart-deadline", "teleport=1m"]).contains("not a tart op"));
    assert!(err(&["--vm-name-prefix=-x"]).contains("--vm-name-prefix"));
    assert!(err(&["--api-timeout", "40s"]).contains("--api-timeout"));
    assert!(err(&["--min-tart-version", "2.x"]).contains("--min-tart-version"));
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
fn semver_parses_three_numbers_only() {
    assert_eq!(parse_semver("2.35.0"), Some((2, 35, 0)));
    assert_eq!(parse_semver("2.35"), None);
    assert_eq!(parse_semver("SNAPSHOT"), None);
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
