//! Golden argv tests for [`super`].

use std::{path::PathBuf, time::Duration};

use super::*;
use crate::{DiskCaching, DiskSync};

fn vm(s: &str) -> VmName {
    VmName::new(s).unwrap()
}

fn strs(v: Vec<OsString>) -> Vec<String> {
    v.into_iter().map(|s| s.into_string().unwrap()).collect()
}

fn run_opts() -> RunOpts {
    RunOpts {
        dirs: vec![],
        network: Network::Shared,
        root_disk: Default::default(),
        suspendable: false,
        log_path: PathBuf::from("/tmp/x.log"),
        log_cap_bytes: 1 << 20,
        start_window: Duration::from_secs(5),
    }
}

#[test]
fn simple_commands_have_exact_argv() {
    assert_eq!(strs(version()), ["--version"]);
    assert_eq!(strs(list()), ["list", "--format", "json"]);
    assert_eq!(strs(get(&vm("a"))), ["get", "a", "--format", "json"]);
    assert_eq!(strs(delete(&vm("a"))), ["delete", "a"]);
    assert_eq!(
        strs(stop(&vm("a"), Duration::from_millis(5900))),
        ["stop", "a", "--timeout", "5"]
    );
    assert_eq!(
        strs(ip(&vm("a"), Duration::from_secs(60), IpResolver::Agent)),
        ["ip", "a", "--wait", "60", "--resolver", "agent"]
    );
}

#[test]
fn each_network_asks_ip_through_the_resolver_that_sees_its_guest() {
    let softnet = Network::Softnet {
        allow: vec!["10.0.0.0/8".into()],
        block: vec![],
        expose: vec![],
    };
    for (network, resolver) in [
        (Network::Shared, "dhcp"),
        (softnet, "dhcp"),
        (Network::Host, "dhcp"),
        (Network::Bridged("en0".into()), "arp"),
    ] {
        let argv = strs(ip(&vm("a"), Duration::from_secs(60), network.ip_resolver()));
        assert_eq!(
            argv,
            ["ip", "a", "--wait", "60", "--resolver", resolver],
            "{network:?}"
        );
    }
}

#[test]
fn ip_wait_is_capped_at_u16() {
    assert_eq!(
        strs(ip(&vm("a"), Duration::from_secs(100_000), IpResolver::Dhcp)),
        ["ip", "a", "--wait", "65535", "--resolver", "dhcp"]
    );
}

#[test]
fn pull_and_clone_pass_the_image_as_one_entry() {
    assert_eq!(
        strs(pull("ghcr.io/cirruslabs/macos-tahoe-base:latest").unwrap()),
        ["pull", "ghcr.io/cirruslabs/macos-tahoe-base:latest"]
    );
    assert_eq!(
        strs(clone("ghcr.io/x/y@sha256:abc", &vm("pod-1")).unwrap()),
        ["clone", "ghcr.io/x/y@sha256:abc", "pod-1"]
    );
}

#[test]
fn image_that_looks_like_a_flag_is_rejected() {
    assert!(matches!(pull("--insecure"), Err(ArgError::InvalidImage(_))));
    assert!(matches!(
        clone("", &vm("a")),
        Err(ArgError::InvalidImage(_))
    ));
    assert!(matches!(pull("a/b\nc"), Err(ArgError::InvalidImage(_))));
}

#[test]
fn set_lists_only_given_options_in_order() {
    assert_eq!(strs(set(&vm("a"), &SetOpts::default())), ["set", "a"]);
    let all = SetOpts {
        cpu: Some(4),
        memory_mib: Some(8192),
        disk_size_gb: Some(80),
        random_mac: true,
        random_serial: true,
    };
    assert_eq!(
        strs(set(&vm("a"), &all)),
        [
            "set",
            "a",
            "--cpu",
            "4",
            "--memory",
            "8192",
            "--disk-size",
            "80",
            "--random-mac",
            "--random-serial"
        ]
    );
}

#[test]
fn run_always_has_no_graphics() {
    assert_eq!(
        strs(run(&vm("a"), &run_opts()).unwrap()),
        ["run", "a", "--no-graphics"]
    );
}

#[test]
fn run_renders_shares_network_and_suspendable() {
    let mut o = run_opts();
    o.dirs = vec![
        DirShare {
            name: None,
            path: "/src".into(),
            read_only: false,
            tag: None,
        },
        DirShare {
            name: Some("build".into()),
            path: "/b".into(),
            read_only: true,
            tag: Some("t1".into()),
        },
        DirShare {
            name: Some("cache".into()),
            path: "/c".into(),
            read_only: false,
            tag: Some("t1".into()),
        },
        DirShare {
            name: None,
            path: "/ro".into(),
            read_only: true,
            tag: None,
        },
    ];
    o.network = Network::Softnet {
        allow: vec!["10.0.0.0/8".into(), "192.168.0.0/16".into()],
        block: vec!["1.2.3.4/32".into()],
        expose: vec![],
    };
    o.suspendable = true;
    assert_eq!(
        strs(run(&vm("a"), &o).unwrap()),
        [
            "run",
            "a",
            "--no-graphics",
            "--dir",
            "/src",
            "--dir",
            "build:/b:ro,tag=t1",
            "--dir",
            "cache:/c:tag=t1",
            "--dir",
            "/ro:ro",
            "--net-softnet",
            "--net-softnet-allow=10.0.0.0/8,192.168.0.0/16",
            "--net-softnet-block=1.2.3.4/32",
            "--suspendable"
        ]
    );
}

#[test]
fn run_renders_bridged_host_and_plain_softnet() {
    let mut o = run_opts();
    o.network = Network::Bridged("en0".into());
    assert_eq!(strs(run(&vm("a"), &o).unwrap())[3], "--net-bridged=en0");
    o.network = Network::Host;
    assert_eq!(strs(run(&vm("a"), &o).unwrap())[3], "--net-host");
    o.network = Network::Softnet {
        allow: vec![],
        block: vec![],
        expose: vec![],
    };
    assert_eq!(
        strs(run(&vm("a"), &o).unwrap()),
        ["run", "a", "--no-graphics", "--net-softnet"]
    );
}

#[test]
fn run_renders_softnet_exposed_ports() {
    let mut o = run_opts();
    o.network = Network::Softnet {
        allow: vec![],
        block: vec![],
        expose: vec!["2222:22".into(), "8080:80".into()],
    };
    assert_eq!(
        strs(run(&vm("a"), &o).unwrap()),
        [
            "run",
            "a",
            "--no-graphics",
            "--net-softnet",
            "--net-softnet-expose=2222:22,8080:80"
        ]
    );
}

#[test]
fn run_renders_root_disk_opts_only_when_set() {
    let cases = [
        (None, None, None),
        (
            Some(DiskSync::None),
            None,
            Some("--root-disk-opts=sync=none"),
        ),
        (
            None,
            Some(DiskCaching::Cached),
            Some("--root-disk-opts=caching=cached"),
        ),
        (
            Some(DiskSync::Fsync),
            Some(DiskCaching::Uncached),
            Some("--root-disk-opts=sync=fsync,caching=uncached"),
        ),
        (
            Some(DiskSync::Full),
            Some(DiskCaching::Automatic),
            Some("--root-disk-opts=sync=full,caching=automatic"),
        ),
    ];
    for (sync, caching, want) in cases {
        let mut o = run_opts();
        o.root_disk = RootDiskOpts { sync, caching };
        o.network = Network::Host;
        o.suspendable = true;
        let v = strs(run(&vm("a"), &o).unwrap());
        let mut expected = vec!["run", "a", "--no-graphics", "--net-host"];
        expected.extend(want);
        expected.push("--suspendable");
        assert_eq!(v, expected, "{sync:?} {caching:?}");
    }
}

#[test]
fn share_path_with_colon_is_rejected() {
    let mut o = run_opts();
    o.dirs = vec![DirShare {
        name: None,
        path: "/a:b".into(),
        read_only: false,
        tag: None,
    }];
    assert!(matches!(
        run(&vm("a"), &o),
        Err(ArgError::InvalidDirShare(_))
    ));
}

#[test]
fn exec_passes_hostile_strings_verbatim_without_double_dash() {
    let cmd: Vec<String> = vec![
        "sh".into(),
        "-c".into(),
        "echo $(x); rm -rf / ; echo \"q\" 'q'\nnext".into(),
        "--".into(),
        "".into(),
    ];
    assert_eq!(
        strs(exec(&vm("a"), &cmd)),
        [
            "exec",
            "a",
            "sh",
            "-c",
            "echo $(x); rm -rf / ; echo \"q\" 'q'\nnext",
            "--",
            ""
        ]
    );
}

#[test]
fn hostile_share_path_is_one_entry() {
    let mut o = run_opts();
    o.dirs = vec![DirShare {
        name: None,
        path: "/tmp/$(x); echo \"q\"\nz".into(),
        read_only: false,
        tag: None,
    }];
    let v = strs(run(&vm("a"), &o).unwrap());
    assert_eq!(v[4], "/tmp/$(x); echo \"q\"\nz");
    assert_eq!(v.len(), 5);
}

#[test]
fn prune_renders_entries_and_criteria() {
    assert_eq!(
        strs(prune(&PruneOpts {
            vms: false,
            older_than_days: Some(7),
            space_budget_gb: Some(100)
        })),
        [
            "prune",
            "--entries",
            "caches",
            "--older-than",
            "7",
            "--space-budget",
            "100"
        ]
    );
    assert_eq!(
        strs(prune(&PruneOpts {
            vms: true,
            ..Default::default()
        })),
        ["prune", "--entries", "vms"]
    );
}

#[test]
fn display_quotes_entries_with_shell_characters() {
    let v = exec(&vm("a"), &["echo".into(), "a b".into()]);
    assert_eq!(display(&v), "exec a echo \"a b\"");
}

#[test]
fn streaming_exec_puts_its_flags_before_the_vm_name() {
    let cmd: Vec<String> = vec!["sh".into(), "-c".into(), "echo -t".into()];
    let table = [
        (false, false, vec!["exec", "a", "sh", "-c", "echo -t"]),
        (true, false, vec!["exec", "-i", "a", "sh", "-c", "echo -t"]),
        (false, true, vec!["exec", "-t", "a", "sh", "-c", "echo -t"]),
        (
            true,
            true,
            vec!["exec", "-i", "-t", "a", "sh", "-c", "echo -t"],
        ),
    ];
    for (i, t, want) in table {
        assert_eq!(
            strs(exec_streaming(&vm("a"), &cmd, i, t)),
            want,
            "-i {i} -t {t}"
        );
    }
}

#[test]
fn delete_image_takes_only_remote_names() {
    assert_eq!(
        delete_image("ghcr.io/acme/macos:15").unwrap(),
        ["delete", "ghcr.io/acme/macos:15"]
    );
    for bad in ["my-vm", "-rf", ""] {
        assert!(delete_image(bad).is_err(), "{bad}");
    }
}
