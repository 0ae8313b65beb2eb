use super::*;
use crate::cli::{parse, spec};
use crate::knobs::default_bridge_interfaces;

fn run(args: &str) -> Parsed {
    let argv: Vec<String> = std::iter::once("vm")
        .chain(args.split_whitespace())
        .map(String::from)
        .collect();
    parse(spec("run").unwrap(), &argv).unwrap()
}

/// The whole stderr text and exit code of a failure.
fn err(f: Failure) -> (String, i32) {
    (f.to_string(), f.exit_code())
}

#[test]
fn each_network_flag_alone_is_accepted_and_named() {
    for (args, net) in [
        ("", RunNet::Shared),
        ("--no-graphics", RunNet::Shared),
        ("--net-softnet", RunNet::Softnet),
        ("--net-softnet-allow=10.0.0.0/8", RunNet::Softnet),
        ("--net-softnet-block 0.0.0.0/0", RunNet::Softnet),
        ("--net-softnet-expose 2222:22", RunNet::Softnet),
        ("--net-softnet-control-fd 3", RunNet::Softnet),
        (
            "--net-softnet --net-softnet-allow=10.0.0.0/8 --net-softnet-block=1.2.3.0/24",
            RunNet::Softnet,
        ),
        ("--net-host", RunNet::Host),
        ("--net-bridged en0", RunNet::Bridged(vec!["en0".into()])),
        (
            "--net-bridged=en0 --net-bridged Wi-Fi",
            RunNet::Bridged(vec!["en0".into(), "Wi-Fi".into()]),
        ),
    ] {
        assert_eq!(validate(&run(args)).unwrap(), net, "{args}");
    }
}

#[test]
fn two_networks_or_two_views_are_refused_in_validates_order() {
    let exclusive = "--net-bridged, --net-softnet and --net-host are mutually exclusive";
    for (args, msg) in [
        ("--net-softnet --net-host", exclusive),
        ("--net-softnet --net-bridged en0", exclusive),
        ("--net-host --net-bridged en0", exclusive),
        ("--net-softnet-allow=10.0.0.0/8 --net-host", exclusive),
        ("--net-softnet-expose 2222:22 --net-bridged=en0", exclusive),
        ("--net-softnet-control-fd 3 --net-host", exclusive),
        (
            "--vnc --vnc-experimental --net-host --net-softnet",
            "--vnc and --vnc-experimental are mutually exclusive",
        ),
        (
            "--net-host --net-softnet --graphics --no-graphics",
            exclusive,
        ),
        (
            "--graphics --no-graphics",
            "--graphics and --no-graphics are mutually exclusive",
        ),
        (
            "--no-graphics --capture-system-keys",
            "--captures-system-keys can only be used with the default VM view",
        ),
        (
            "--vnc --capture-system-keys",
            "--captures-system-keys can only be used with the default VM view",
        ),
        (
            "--net-softnet-control-fd=x",
            "The value 'x' is invalid for '--net-softnet-control-fd <file descriptor>'",
        ),
    ] {
        let (text, code) = err(validate(&run(args)).unwrap_err());
        assert_eq!(code, 64, "{args}");
        assert!(
            text.starts_with(&format!("Error: {msg}\nUsage: tart run")),
            "{args}: {text}"
        );
    }
    assert!(validate(&run("--capture-system-keys")).is_ok());
    assert!(validate(&run("--vnc")).is_ok());
}

#[test]
fn an_amd64_iso_disk_is_refused_whatever_its_options() {
    assert!(validate_disks(&run("--disk /a/ubuntu.iso:ro --disk b.img")).is_ok());
    let (text, code) = err(validate_disks(&run("--disk /a/ubuntu-amd64.iso")).unwrap_err());
    assert_eq!(code, 64);
    assert!(
        text.starts_with("Error: Seems you have a disk targeting x86 architecture (hence amd64 in the name). Please use an 'arm64' version of the disk.\nUsage: tart run"),
        "{text}"
    );
    // Tart tests the whole value, so an option after the path hides the suffix.
    assert!(validate_disks(&run("--disk /a/ubuntu-amd64.iso:ro")).is_ok());
}

fn build_with(args: &str, softnet: SoftnetSetup) -> Result<(), Failure> {
    let p = run(args);
    build(&RunNet::of(&p), &p, softnet, &default_bridge_interfaces())
}

#[test]
fn softnet_and_host_need_the_softnet_program_and_a_control_fd_above_2() {
    for args in [
        "--net-softnet",
        "--net-softnet-allow=10.0.0.0/8",
        "--net-host",
    ] {
        assert!(build_with(args, SoftnetSetup::Setuid).is_ok(), "{args}");
        // Not being setuid shows only once softnet runs, after the VM started.
        assert!(build_with(args, SoftnetSetup::NotSetuid).is_ok(), "{args}");
        assert_eq!(
            err(build_with(args, SoftnetSetup::Missing).unwrap_err()),
            (
                "Error: InitializationFailed(why: \"softnet not found in PATH\")".into(),
                1
            ),
            "{args}"
        );
    }
    for args in ["", "--net-bridged en0"] {
        assert!(build_with(args, SoftnetSetup::Missing).is_ok(), "{args}");
    }
    assert!(build_with("--net-softnet-control-fd 3", SoftnetSetup::Setuid).is_ok());
    for fd in ["0", "2", "-1"] {
        assert_eq!(
            err(build_with(&format!("--net-softnet-control-fd={fd}"), SoftnetSetup::Missing)
                .unwrap_err()),
            (
                "Error: InitializationFailed(why: \"Softnet control file descriptor must be greater than 2\")".into(),
                1
            ),
            "{fd}"
        );
    }
}

#[test]
fn bridged_names_an_interface_by_identifier_or_display_name() {
    for args in [
        "--net-bridged en0",
        "--net-bridged Ethernet",
        "--net-bridged=Wi-Fi --net-bridged=en0",
    ] {
        assert!(build_with(args, SoftnetSetup::Missing).is_ok(), "{args}");
    }
    for (args, given) in [
        ("--net-bridged en7", r#"["en7"]"#),
        ("--net-bridged en0 --net-bridged en7", r#"["en0", "en7"]"#),
        ("--net-bridged list", r#"["list"]"#),
        ("--net-bridged ethernet", r#"["ethernet"]"#),
    ] {
        let (text, code) = err(build_with(args, SoftnetSetup::Setuid).unwrap_err());
        assert_eq!(code, 64);
        assert_eq!(
            text,
            format!(
                "Error: no bridge interfaces matched \"{given}\", available interfaces: [\"en0 (or \\\"Ethernet\\\")\", \"en1 (or \\\"Wi-Fi\\\")\"]\nUsage: tart <subcommand>\n  See 'tart --help' for more information."
            ),
            "{args}"
        );
    }
    let p = run("--net-bridged en0");
    let none = build(&RunNet::of(&p), &p, SoftnetSetup::Setuid, &[]).unwrap_err();
    assert!(
        none.to_string().starts_with(
            "Error: no bridge interfaces matched \"[\"en0\"]\", available interfaces: []\n"
        ),
        "{none}"
    );
}

#[test]
fn root_disk_options_accept_tarts_modes_and_ignore_unknown_words() {
    for ok in [
        None,
        Some(""),
        Some("ro"),
        Some("caching=cached"),
        Some("sync=none,caching=uncached"),
        Some("sync=fsync,ro"),
        Some("sync=full,caching=automatic"),
        Some("bogus,cache=x"),
        Some("sync=bad,sync=none"),
    ] {
        assert!(root_disk(ok).is_ok(), "{ok:?}");
    }
    for (opts, text) in [
        (
            "sync=always",
            "unsupported disk image synchronization mode: \"always\"",
        ),
        (
            "caching=cached,sync=FULL",
            "unsupported disk image synchronization mode: \"FULL\"",
        ),
        (
            "caching=fast",
            "unsupported disk image caching mode: \"fast\"",
        ),
        (
            "caching=fast,sync=x",
            "unsupported disk image synchronization mode: \"x\"",
        ),
    ] {
        assert_eq!(
            err(root_disk(Some(opts)).unwrap_err()),
            (text.to_string(), 1),
            "{opts}"
        );
    }
}

#[test]
fn each_resolver_finds_what_its_network_exposes() {
    use Found::*;
    use Resolver::*;
    let bridged = RunNet::Bridged(vec!["en0".into()]);
    for (net, dhcp, arp, agent) in [
        (&RunNet::Shared, Lease, Lease, Lease),
        (&RunNet::Softnet, Lease, Nothing, Lease),
        (&RunNet::Host, Lease, Nothing, Lease),
        (&bridged, Nothing, Lan, Lan),
    ] {
        assert_eq!(
            [found(net, Dhcp), found(net, Arp), found(net, Agent)],
            [dhcp, arp, agent],
            "{net:?}"
        );
    }
}
