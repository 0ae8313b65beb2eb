//! fake-tart's networks against the spec (docs/reference/tart-cli.md §2.6, §2.11, §3.3): the
//! `tart run` network, view and root-disk flags Tart refuses, with its texts and exit codes;
//! the fake host's softnet and bridge interfaces (knobs `softnet`, `bridge_interfaces`); the
//! combinations Tart accepts, recorded in `.fake-run.json`; and what `tart ip` finds with each
//! resolver for a guest on each network.

use nix::sys::signal::Signal;
use tart_kubelet_tests::fake::{FakeHome, Knobs, SoftnetSetup};

use crate::fake_tart_vm::{finish, home_with, signal, start};

const FT: &str = env!("CARGO_BIN_EXE_fake-tart");

const EXCLUSIVE: &str = "--net-bridged, --net-softnet and --net-host are mutually exclusive";

/// `tart run vm1 <args>`, expected to fail without leaving the VM running: (exit code, stderr).
async fn refused(h: &FakeHome, args: &[&str]) -> (i32, String) {
    let argv: Vec<&str> = ["run", "vm1"].iter().chain(args).copied().collect();
    let out = h.tart(FT, &argv).await.unwrap();
    assert!(!h.is_running("vm1"), "{args:?}");
    (out.code.expect("an exit code"), out.stderr)
}

#[tokio::test]
async fn run_refuses_the_flag_combinations_tarts_validate_refuses() {
    let h = home_with(&["vm1"]);
    for (args, msg) in [
        (&["--net-softnet", "--net-host"][..], EXCLUSIVE),
        (&["--net-host", "--net-bridged", "en0"], EXCLUSIVE),
        (&["--net-softnet", "--net-bridged=en0"], EXCLUSIVE),
        (&["--net-softnet-allow=10.0.0.0/8", "--net-host"], EXCLUSIVE),
        (
            &["--net-softnet-block", "0.0.0.0/0", "--net-bridged", "en0"],
            EXCLUSIVE,
        ),
        (
            &["--net-softnet-expose", "2222:22", "--net-host"],
            EXCLUSIVE,
        ),
        (&["--net-softnet-control-fd", "3", "--net-host"], EXCLUSIVE),
        (
            &["--vnc", "--vnc-experimental"],
            "--vnc and --vnc-experimental are mutually exclusive",
        ),
        (
            &["--no-graphics", "--capture-system-keys"],
            "--captures-system-keys can only be used with the default VM view",
        ),
        (
            &["--net-softnet-control-fd", "three"],
            "The value 'three' is invalid for '--net-softnet-control-fd <file descriptor>'",
        ),
        (
            &["--disk", "/isos/ubuntu-amd64.iso"],
            "Seems you have a disk targeting x86 architecture (hence amd64 in the name). Please use an 'arm64' version of the disk.",
        ),
    ] {
        let (code, stderr) = refused(&h, args).await;
        assert_eq!(code, 64, "{args:?}: {stderr}");
        assert!(
            stderr.starts_with(&format!("Error: {msg}\nUsage: tart run")),
            "{args:?}: {stderr}"
        );
    }
    // validate() checks the flags before it opens the VM.
    let out = h
        .tart(FT, &["run", "nope", "--net-host", "--net-softnet"])
        .await
        .unwrap();
    assert_eq!(out.code, Some(64));
    assert!(
        out.stderr.starts_with(&format!("Error: {EXCLUSIVE}\n")),
        "{}",
        out.stderr
    );
}

#[tokio::test]
async fn run_fails_like_tart_when_the_hosts_network_or_the_root_disk_modes_cannot_be_built() {
    let h = home_with(&["vm1"]);
    h.set_knobs(
        &Knobs::new()
            .with_softnet(SoftnetSetup::Missing)
            .with_bridge_interfaces(&[("en5", Some("Thunderbolt Ethernet")), ("bridge0", None)]),
    )
    .unwrap();
    for args in [
        &["--net-softnet"][..],
        &["--net-softnet-allow", "10.0.0.0/8"],
        &["--net-host"],
    ] {
        assert_eq!(
            refused(&h, args).await,
            (
                1,
                "Error: InitializationFailed(why: \"softnet not found in PATH\")\n".into()
            ),
            "{args:?}"
        );
        assert!(h.run_record("vm1").is_none());
    }
    assert_eq!(
        refused(&h, &["--net-softnet-control-fd=2"]).await,
        (
            1,
            "Error: InitializationFailed(why: \"Softnet control file descriptor must be greater than 2\")\n"
                .into()
        )
    );
    assert_eq!(
        refused(&h, &["--net-bridged", "en5", "--net-bridged", "en0"]).await,
        (
            64,
            "Error: no bridge interfaces matched \"[\"en5\", \"en0\"]\", available interfaces: [\"en5 (or \\\"Thunderbolt Ethernet\\\")\", \"bridge0\"]\nUsage: tart <subcommand>\n  See 'tart --help' for more information.\n"
                .into()
        )
    );
    assert_eq!(
        refused(&h, &["--root-disk-opts", "caching=cached,sync=always"]).await,
        (
            1,
            "unsupported disk image synchronization mode: \"always\"\n".into()
        )
    );
    assert_eq!(
        refused(&h, &["--root-disk-opts=caching=fast"]).await,
        (1, "unsupported disk image caching mode: \"fast\"\n".into())
    );
}

#[tokio::test]
async fn softnet_that_is_not_setuid_ends_the_run_once_the_vm_starts() {
    let h = home_with(&["vm1", "vm2"]);
    h.set_knobs(&Knobs::new().with_softnet(SoftnetSetup::NotSetuid))
        .unwrap();
    for args in [&["--net-softnet-allow=10.0.0.0/8"][..], &["--net-host"]] {
        assert_eq!(
            refused(&h, args).await,
            (
                1,
                "root privileges are required to run and passwordless sudo was not available\nRuntimeFailed(why: \"Softnet process terminated prematurely\")\n"
                    .into()
            ),
            "{args:?}"
        );
    }
    // Only softnet's networks need it.
    let child = start(&h, "vm2", &["--net-bridged", "en0"]).await;
    signal(&child, Signal::SIGINT);
    assert_eq!(finish(child).await.status.code(), Some(0));
}

#[tokio::test]
async fn run_accepts_each_network_alone_and_records_its_argv() {
    let cases: [(&str, &[&str]); 6] = [
        ("nat", &["--no-graphics"]),
        (
            "soft",
            &[
                "--net-softnet",
                "--net-softnet-allow=10.0.0.0/8,192.168.0.0/16",
                "--net-softnet-block",
                "0.0.0.0/0",
                "--net-softnet-expose",
                "2222:22,8080:80",
            ],
        ),
        ("implied", &["--net-softnet-block=0.0.0.0/0"]),
        (
            "host",
            &["--net-host", "--root-disk-opts", "sync=none,caching=cached"],
        ),
        ("lan", &["--net-bridged=Ethernet", "--net-bridged", "en1"]),
        (
            "disk",
            &["--root-disk-opts=ro,sync=fsync,caching=uncached,bogus"],
        ),
    ];
    let names: Vec<&str> = cases.iter().map(|(n, _)| *n).collect();
    let h = home_with(&names);
    for (name, args) in cases {
        let child = start(&h, name, args).await;
        let record = h.run_record(name).expect("run record");
        let want: Vec<&str> = ["run", name].iter().chain(args).copied().collect();
        assert_eq!(record["args"], serde_json::json!(want), "{name}");
        assert!(h.is_running(name), "{name}");
        signal(&child, Signal::SIGINT);
        assert_eq!(finish(child).await.status.code(), Some(0), "{name}");
    }
}

/// `tart ip <vm> --resolver <resolver>`: the address, or the failure's stderr.
async fn ip(h: &FakeHome, vm: &str, resolver: &str) -> Result<String, String> {
    let out = h
        .tart(FT, &["ip", vm, "--resolver", resolver])
        .await
        .unwrap();
    match out.code {
        Some(0) => Ok(out.stdout.trim().to_owned()),
        _ => Err(out.stderr),
    }
}

#[tokio::test]
async fn ip_finds_each_networks_guest_only_through_the_resolvers_that_see_it() {
    let nets: [(&str, &[&str]); 4] = [
        ("nat", &[]),
        ("soft", &["--net-softnet"]),
        ("host", &["--net-host"]),
        ("lan", &["--net-bridged", "en0"]),
    ];
    let h = home_with(&nets.map(|(n, _)| n));
    let mut children = Vec::new();
    for (name, args) in nets {
        children.push(start(&h, name, args).await);
    }
    let lease = |a: &Result<String, String>| a.as_ref().is_ok_and(|a| a.starts_with("192.168.64."));
    let nothing = Err("no IP address found\n".to_owned());

    let nat = ip(&h, "nat", "dhcp").await;
    assert!(lease(&nat), "{nat:?}");
    assert_eq!(ip(&h, "nat", "arp").await, nat);
    assert_eq!(ip(&h, "nat", "agent").await, nat);
    for name in ["soft", "host"] {
        let dhcp = ip(&h, name, "dhcp").await;
        assert!(lease(&dhcp), "{name}: {dhcp:?}");
        assert_eq!(ip(&h, name, "arp").await, nothing, "{name}");
        assert_eq!(ip(&h, name, "agent").await, dhcp, "{name}");
    }
    assert_eq!(ip(&h, "lan", "dhcp").await, nothing);
    let arp = ip(&h, "lan", "arp").await;
    assert!(
        arp.as_ref().is_ok_and(|a| a.starts_with("192.168.1.")),
        "{arp:?}"
    );
    assert_eq!(ip(&h, "lan", "agent").await, arp);

    for child in children {
        signal(&child, Signal::SIGINT);
        finish(child).await;
    }
}
