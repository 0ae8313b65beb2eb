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
        ("node_labels = [\"kubernetes.io/role=x\"]", "namespaces"),
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
fn operator_labels_follow_kubelets_node_labels_rule() {
    use super::values::node_label_refusal;
    let allowed = [
        "team",
        "tart.run/pool",
        "example.com/rack",
        "topology.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        "failure-domain.beta.kubernetes.io/zone",
        "node.kubernetes.io/instance-type",
        "beta.kubernetes.io/instance-type",
        "node.kubernetes.io/pool",
        "kubelet.kubernetes.io/anything",
        "sub.node.kubernetes.io/x",
        "kubernetes.io.example.com/x",
    ];
    for key in allowed {
        assert_eq!(node_label_refusal(key), None, "{key}");
    }
    let refused = [
        (
            "kubernetes.io/role",
            "allowed prefix (kubelet.kubernetes.io, node.kubernetes.io)",
        ),
        (
            "node-role.kubernetes.io/worker",
            "kubernetes.io and k8s.io namespaces",
        ),
        (
            "node-restriction.kubernetes.io/pool",
            "kubernetes.io and k8s.io namespaces",
        ),
        ("k8s.io/x", "topology.kubernetes.io/zone"),
        ("example.k8s.io/x", "node.kubernetes.io/instance-type"),
        ("kubernetes.io/os", "set by the agent"),
        ("kubernetes.io/hostname", "set by the agent"),
    ];
    for (key, says) in refused {
        let why = node_label_refusal(key).unwrap_or_else(|| panic!("{key} accepted"));
        assert!(why.contains(says) && why.contains(key), "{key}: {why}");
    }
    let e = err(&["--node-label", "node-role.kubernetes.io/worker="]);
    assert!(e.contains("kubelet's --node-labels"), "{e}");
    let c = resolve(&[
        "--node-label",
        "tart.run/pool=a,team=ios,topology.kubernetes.io/zone=rack-3",
    ])
    .unwrap();
    assert_eq!(c.node_labels.len(), 3);
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
fn the_client_ca_is_the_option_else_the_kubeconfig_ca_else_none() {
    let der = vec![vec![0x30, 0x03, 0x02, 0x01, 0x01]];
    let file = PathBuf::from("/etc/ca.pem");
    for (option, kubeconfig, want) in [
        (Some(&file), Some(&der), Some(ClientCa::File(file.clone()))),
        (Some(&file), None, Some(ClientCa::File(file.clone()))),
        (None, Some(&der), Some(ClientCa::Kubeconfig(der.clone()))),
        (None, Some(&Vec::new()), None),
        (None, None, None),
    ] {
        assert_eq!(
            client_ca(option.map(PathBuf::as_path), kubeconfig.map(Vec::as_slice)),
            want,
            "option {option:?}, kubeconfig CA {kubeconfig:?}"
        );
    }
}

/// The default reads the CA the way the agent reads its kubeconfig: embedded data or a file
/// named relative to the kubeconfig.
#[tokio::test]
async fn the_default_client_ca_is_the_kubeconfigs_cluster_ca_embedded_or_in_a_file() {
    use base64::Engine as _;
    use rustls::pki_types::pem::PemObject as _;
    let pem = std::fs::read(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/kubelet_api/testdata/ca.crt"),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ca.crt"), &pem).unwrap();
    let data = base64::engine::general_purpose::STANDARD.encode(&pem);
    for cluster in [
        format!("certificate-authority-data: {data}"),
        "certificate-authority: ca.crt".to_owned(),
    ] {
        let path = dir.path().join("kubeconfig");
        std::fs::write(
            &path,
            format!(
                "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:6443\n    {cluster}\ncontexts:\n- name: c\n  context: {{cluster: c, user: u}}\nusers:\n- name: u\n  user: {{token: t}}\n"
            ),
        )
        .unwrap();
        let file = kube::config::Kubeconfig::read_from(&path).unwrap();
        let kc = kube::Config::from_custom_kubeconfig(file, &Default::default())
            .await
            .unwrap();
        let Some(ClientCa::Kubeconfig(certs)) = client_ca(None, kc.root_cert.as_deref()) else {
            panic!("{cluster}: no CA from the kubeconfig");
        };
        let want: Vec<Vec<u8>> = rustls::pki_types::CertificateDer::pem_slice_iter(&pem)
            .map(|c| c.unwrap().to_vec())
            .collect();
        assert_eq!(certs, want, "{cluster}");
    }
}

#[test]
fn node_ip_must_be_an_address_the_api_server_can_dial() {
    for (argv, says) in [
        (
            &["--node-ip", "mac-mini-01.local"][..],
            "invalid IP address",
        ),
        (&["--node-ip", "10.0.0.300"][..], "--node-ip"),
        (&["--node-ip", "0.0.0.0"][..], "not an unspecified"),
        (&["--node-ip", "::"][..], "--node-ip"),
        (&["--node-ip", "224.0.0.1"][..], "multicast"),
    ] {
        let e = err(argv);
        assert!(e.contains(says), "{argv:?}: {e}");
    }
    let e = from_file("node_ip = \"mac-mini-01.local\"")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("node_ip") && e.contains("invalid IP address"),
        "{e}"
    );
    let ip = |argv: &[&str]| resolve(argv).unwrap().node_ip;
    assert_eq!(ip(&[]), None);
    assert_eq!(
        ip(&["--node-ip", "100.64.0.7"]),
        Some([100, 64, 0, 7].into())
    );
    assert_eq!(
        ip(&["--node-ip", "fd00::7"]),
        Some("fd00::7".parse().unwrap())
    );
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

#[test]
fn vm_profiles_come_from_the_file_and_a_bad_one_names_the_profile_and_the_key() {
    let args = from_file(
        "default_vm_profile = \"lan\"\n\
         [vm_profiles.lan]\nnetwork = \"bridged:en0\"\nroot_disk_caching = \"cached\"\n\
         [vm_profiles.isolated]\nnetwork = \"softnet\"\nsoftnet_allow = [\"10.0.0.0/8\"]\n",
    )
    .unwrap();
    let cfg = Config::resolve(args, &host()).unwrap();
    assert_eq!(
        cfg.vm_profiles.get("lan").unwrap().network,
        tart::Network::Bridged("en0".into())
    );
    assert_eq!(cfg.vm_profiles.default_profile().0, Some("lan"));
    let bad = from_file("[vm_profiles.isolated]\nnetwork = \"softnet\"\nsoftnet_block = [\"x\"]\n")
        .unwrap();
    let e = Config::resolve(bad, &host()).unwrap_err().to_string();
    assert!(
        e.starts_with("invalid VM profile isolated: softnet_block: \"x\" is not a CIDR"),
        "{e}"
    );
    let missing = from_file("default_vm_profile = \"wan\"\n").unwrap();
    let e = Config::resolve(missing, &host()).unwrap_err().to_string();
    assert!(
        e.starts_with("invalid default_vm_profile: no [vm_profiles.wan]"),
        "{e}"
    );
    assert!(
        from_file("[vm_profiles.x]\nnetwrok = \"host\"\n").is_err(),
        "an unknown key in a profile is refused"
    );
}
