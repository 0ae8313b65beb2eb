use clap::Parser;
use k8s_openapi::jiff::Timestamp;

use super::*;
use crate::{
    cli::Cli,
    config::HostDefaults,
    host::{FixedHost, PidStats, VolumeStats},
    hostcheck::{Failure, HostCheck},
    node::health::HostFault,
};

fn cfg(argv: &[&str]) -> Config {
    let cli = Cli::try_parse_from(std::iter::once("t").chain(argv.iter().copied())).unwrap();
    let host = HostDefaults {
        hostname: "mini-1".into(),
        home: "/Users/ci".into(),
    };
    Config::resolve(cli.run, &host).unwrap()
}

fn facts() -> HostFacts {
    let mut f = FixedHost::default().facts;
    f.tart_home_volume = Some(VolumeStats {
        total_bytes: 1000 << 30,
        free_bytes: 500 << 30,
    });
    f
}

fn healthy() -> HealthSnapshot {
    HealthSnapshot {
        probe: TartProbe::Ok {
            version: "2.35.0".into(),
        },
        fault: None,
        checks: Vec::new(),
        unavailable_profiles: Default::default(),
        checked: true,
    }
}

fn t(secs: i64) -> Time {
    Time(Timestamp::from_second(secs).unwrap())
}

fn status(
    cfg: &Config,
    facts: &HostFacts,
    health: &HealthSnapshot,
    prev: &[NodeCondition],
    now: i64,
) -> NodeStatus {
    desired_status(StatusInput {
        cfg,
        facts,
        health,
        internal_ip: "10.0.0.5",
        previous: prev,
        now: &t(now),
        images: None,
        prepull: None,
    })
}

fn cond<'a>(s: &'a NodeStatus, type_: &str) -> &'a NodeCondition {
    s.conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == type_)
        .unwrap_or_else(|| panic!("no {type_}"))
}

#[test]
fn healthy_host_is_ready_with_kubelet_reasons_and_ready_last() {
    let s = status(&cfg(&[]), &facts(), &healthy(), &[], 100);
    let types: Vec<_> = s
        .conditions
        .iter()
        .flatten()
        .map(|c| c.type_.as_str())
        .collect();
    assert_eq!(
        types,
        [
            "MemoryPressure",
            "DiskPressure",
            "PIDPressure",
            "TartReady",
            "Ready"
        ]
    );
    let ready = cond(&s, "Ready");
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_deref()),
        ("True", Some("KubeletReady"))
    );
    assert_eq!(
        cond(&s, "MemoryPressure").reason.as_deref(),
        Some("KubeletHasSufficientMemory")
    );
    assert_eq!(
        cond(&s, "DiskPressure").reason.as_deref(),
        Some("KubeletHasNoDiskPressure")
    );
    assert_eq!(
        cond(&s, "PIDPressure").reason.as_deref(),
        Some("KubeletHasSufficientPID")
    );
    assert_eq!(cond(&s, "TartReady").status, "True");
    let info = s.node_info.unwrap();
    assert_eq!(info.container_runtime_version, "tart://2.35.0");
    assert_eq!(info.os_image, "macOS 15.3.1");
    assert_eq!(
        (info.operating_system.as_str(), info.architecture.as_str()),
        ("darwin", "arm64")
    );
    assert_eq!(
        info.kubelet_version,
        format!("v{}-tart-kubelet", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn capacity_reports_host_totals_and_allocatable_subtracts_the_reserve() {
    let s = status(
        &cfg(&["--memory-reserve", "4Gi"]),
        &facts(),
        &healthy(),
        &[],
        1,
    );
    let cap = s.capacity.unwrap();
    let alloc = s.allocatable.unwrap();
    assert_eq!(cap["cpu"].0, "8");
    assert_eq!(cap["memory"].0, format!("{}Ki", (24u64 << 30) / 1024));
    assert_eq!(alloc["memory"].0, format!("{}Ki", (20u64 << 30) / 1024));
    assert_eq!(
        cap["ephemeral-storage"].0,
        format!("{}Ki", (1000u64 << 30) / 1024)
    );
    assert_eq!(cap["tart.run/vm-slots"].0, "2");
    assert_eq!(cap["pods"].0, "2", "pods defaults to the VM slots");
}

#[test]
fn operator_overrides_replace_host_values() {
    let c = cfg(&[
        "--cpu",
        "4",
        "--memory",
        "16Gi",
        "--ephemeral-storage",
        "200Gi",
        "--vm-slots",
        "1",
    ]);
    let cap = status(&c, &facts(), &healthy(), &[], 1).capacity.unwrap();
    assert_eq!(cap["cpu"].0, "4");
    assert_eq!(cap["memory"].0, format!("{}Ki", 16u64 << 20));
    assert_eq!(cap["ephemeral-storage"].0, format!("{}Ki", 200u64 << 20));
    assert_eq!(cap["tart.run/vm-slots"].0, "1");
}

#[test]
fn unusable_tart_makes_the_node_not_ready_with_the_reason() {
    let cases = [
        (
            TartProbe::NotFound {
                message: "No such file".into(),
            },
            "TartNotFound",
        ),
        (
            TartProbe::VersionUnsupported {
                version: "1.0.0".into(),
                minimum: "2.20.0".into(),
            },
            "TartVersionUnsupported",
        ),
        (
            TartProbe::HomeNotWritable {
                message: "read-only".into(),
            },
            "TartHomeNotWritable",
        ),
        (
            TartProbe::Failing {
                message: "timed out".into(),
            },
            "TartNotWorking",
        ),
    ];
    for (probe, reason) in cases {
        let h = HealthSnapshot {
            probe,
            fault: None,
            checks: Vec::new(),
            unavailable_profiles: Default::default(),
            checked: true,
        };
        let s = status(&cfg(&[]), &facts(), &h, &[], 1);
        assert_eq!(cond(&s, "TartReady").reason.as_deref(), Some(reason));
        let ready = cond(&s, "Ready");
        assert_eq!(
            (ready.status.as_str(), ready.reason.as_deref()),
            ("False", Some("KubeletNotReady"))
        );
        assert!(ready.message.as_deref().unwrap().contains(reason));
    }
}

#[test]
fn a_quarantine_or_a_failing_host_check_shows_on_tart_ready_but_keeps_the_node_ready() {
    let now = tokio::time::Instant::now();
    let quarantined = HealthSnapshot {
        fault: Some(HostFault {
            kind: tart::ErrorKind::VmLimit,
            count: 3,
            since: now,
            until: now,
        }),
        ..healthy()
    };
    let no_gui = HealthSnapshot {
        checks: vec![Failure {
            check: HostCheck::GuiSession,
            message: "no GUI session".into(),
        }],
        ..healthy()
    };
    for (h, reason) in [(quarantined, "VMLimitReached"), (no_gui, "NoGUISession")] {
        let s = status(&cfg(&[]), &facts(), &h, &[], 1);
        let c = cond(&s, "TartReady");
        assert_eq!(
            (c.status.as_str(), c.reason.as_deref()),
            ("False", Some(reason))
        );
        // Ready=False would bring the not-ready NoExecute taint and evict the running VMs.
        assert_eq!(cond(&s, "Ready").status, "True", "{reason}");
    }
}

#[test]
fn pressure_conditions_follow_thresholds() {
    let mut f = facts();
    f.tart_home_volume = Some(VolumeStats {
        total_bytes: 1000,
        free_bytes: 50,
    });
    f.memory_available_bytes = Some(100 << 20);
    f.pids = Some(PidStats {
        used: 950,
        max: 1000,
    });
    let s = status(&cfg(&[]), &f, &healthy(), &[], 1);
    assert_eq!(
        cond(&s, "DiskPressure").reason.as_deref(),
        Some("KubeletHasDiskPressure")
    );
    assert_eq!(cond(&s, "MemoryPressure").status, "True");
    assert_eq!(cond(&s, "PIDPressure").status, "True");
    // Pressure does not make the node NotReady (kubelet behaviour).
    assert_eq!(cond(&s, "Ready").status, "True");
    let s = status(
        &cfg(&["--disk-pressure-free", "10"]),
        &f,
        &healthy(),
        &[],
        1,
    );
    assert_eq!(
        cond(&s, "DiskPressure").status,
        "False",
        "absolute threshold of 10 bytes"
    );
}

#[test]
fn transition_time_is_kept_while_status_is_unchanged_and_unknown_is_not_copied() {
    let c = cfg(&[]);
    let first = status(&c, &facts(), &healthy(), &[], 100);
    let prev = first.conditions.clone().unwrap();
    let second = status(&c, &facts(), &healthy(), &prev, 200);
    let r = cond(&second, "Ready");
    assert_eq!(r.last_transition_time, Some(t(100)));
    assert_eq!(r.last_heartbeat_time, Some(t(200)));
    assert!(!differs(&first, &second), "only heartbeats changed");

    // The node lifecycle controller set Ready=Unknown while we were away.
    let mut server = prev.clone();
    for p in &mut server {
        if p.type_ == "Ready" {
            p.status = "Unknown".into();
            p.last_transition_time = Some(t(150));
        }
    }
    let third = status(&c, &facts(), &healthy(), &server, 300);
    let r = cond(&third, "Ready");
    assert_eq!(
        (r.status.as_str(), r.last_transition_time.clone()),
        ("True", Some(t(300)))
    );
    assert_eq!(condition_status(&third, "Ready"), Some("True"));

    let broken = HealthSnapshot {
        probe: TartProbe::NotFound {
            message: "x".into(),
        },
        fault: None,
        checks: Vec::new(),
        unavailable_profiles: Default::default(),
        checked: true,
    };
    assert!(differs(&second, &status(&c, &facts(), &broken, &prev, 300)));
}

/// Whether two statuses differ in anything but heartbeat times (then a write is needed now).
fn differs(a: &NodeStatus, b: &NodeStatus) -> bool {
    fn strip(s: &NodeStatus) -> NodeStatus {
        let mut s = s.clone();
        for c in s.conditions.iter_mut().flatten() {
            c.last_heartbeat_time = None;
        }
        s
    }
    strip(a) != strip(b)
}

/// The API server dials the kubelet API at the first address of its preferred types; with no
/// `Hostname` published, every order reaches the `InternalIP` (`--node-ip` or the local
/// address towards the API server), on the configured port.
#[test]
fn the_node_publishes_its_internal_ip_alone_and_the_kubelet_port() {
    let s = status(
        &cfg(&["--kubelet-port", "20250"]),
        &facts(),
        &healthy(),
        &[],
        0,
    );
    let addresses: Vec<(&str, &str)> = s
        .addresses
        .iter()
        .flatten()
        .map(|a| (a.type_.as_str(), a.address.as_str()))
        .collect();
    assert_eq!(addresses, [("InternalIP", "10.0.0.5")]);
    let port = s
        .daemon_endpoints
        .and_then(|d| d.kubelet_endpoint)
        .map(|e| e.port);
    assert_eq!(port, Some(20250));
}
