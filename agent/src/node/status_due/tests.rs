use k8s_openapi::api::core::v1::{NodeAddress, NodeSystemInfo};

use super::*;

const S: Duration = Duration::from_secs(1);
const REPORT: Duration = Duration::from_secs(300);

fn cond(type_: &str, status: &str, reason: &str) -> NodeCondition {
    NodeCondition {
        type_: type_.into(),
        status: status.into(),
        reason: Some(reason.into()),
        message: Some("m".into()),
        ..NodeCondition::default()
    }
}

fn desired() -> NodeStatus {
    NodeStatus {
        conditions: Some(vec![
            cond("TartReady", "True", "TartReady"),
            cond("Ready", "True", "KubeletReady"),
        ]),
        capacity: Some([("memory".to_owned(), Quantity("16777216Ki".into()))].into()),
        allocatable: Some([("cpu".to_owned(), Quantity("8".into()))].into()),
        addresses: Some(vec![NodeAddress {
            type_: "InternalIP".into(),
            address: "10.0.0.2".into(),
        }]),
        node_info: Some(NodeSystemInfo {
            kubelet_version: "v1".into(),
            ..NodeSystemInfo::default()
        }),
        ..NodeStatus::default()
    }
}

/// The server's copy: canonical quantities, conditions of other writers, fresh
/// heartbeat times.
fn server() -> NodeStatus {
    let mut s = desired();
    s.capacity = Some(
        [
            ("memory".to_owned(), Quantity("16Gi".into())),
            ("hugepages-2Mi".to_owned(), Quantity("0".into())),
        ]
        .into(),
    );
    s.conditions
        .get_or_insert_default()
        .push(cond("NetworkUnavailable", "False", "RouteCreated"));
    s
}

fn with(f: impl FnOnce(&mut NodeStatus)) -> NodeStatus {
    let mut s = server();
    f(&mut s);
    s
}

#[test]
fn a_changed_image_inventory_is_written() {
    use k8s_openapi::api::core::v1::ContainerImage;
    let img = |n: &str| ContainerImage {
        names: Some(vec![n.into()]),
        size_bytes: Some(1),
    };
    let mut d = desired();
    d.images = Some(vec![img("a")]);
    let same = with(|s| s.images = Some(vec![img("a")]));
    let other = with(|s| s.images = Some(vec![img("b")]));
    assert!(!owned_differs(&d, &same));
    assert!(owned_differs(&d, &other));
    // Before the image keeper's first pass the agent has no inventory to enforce.
    assert!(!owned_differs(&desired(), &other));
}

#[test]
fn an_empty_inventory_matches_the_server_omitting_it() {
    // A Mac that holds no image writes `images: []`; the API server returns no `images` at all.
    let mut d = desired();
    d.images = Some(vec![]);
    let omitted = with(|s| s.images = None);
    assert!(!owned_differs(&d, &omitted));
    assert_eq!(write_due(&d, Some(&omitted), Some(5 * S), REPORT), None);
    // An image the server still lists is not what an empty inventory wants.
    let held = with(|s| {
        s.images = Some(vec![k8s_openapi::api::core::v1::ContainerImage {
            names: Some(vec!["a".into()]),
            size_bytes: Some(1),
        }]);
    });
    assert!(owned_differs(&d, &held));
}

#[test]
fn write_decisions() {
    let d = desired();
    let unknown = with(|s| {
        for c in s.conditions.iter_mut().flatten() {
            c.status = "Unknown".into();
            c.reason = Some("NodeStatusUnknown".into());
        }
    });
    let moved = with(|s| s.addresses.get_or_insert_default()[0].address = "10.0.0.3".into());
    let reason = with(|s| s.conditions.get_or_insert_default()[0].reason = Some("X".into()));
    let less = with(|s| {
        s.allocatable = Some([("cpu".to_owned(), Quantity("4".into()))].into());
    });
    type Case<'a> = (
        &'a str,
        Option<&'a NodeStatus>,
        Option<Duration>,
        Option<Due>,
    );
    let cases: [Case<'_>; 9] = [
        ("first write", Some(&server()), None, Some(Due::First)),
        (
            "same, canonical quantities",
            Some(&server()),
            Some(5 * S),
            None,
        ),
        (
            "controller set Unknown",
            Some(&unknown),
            Some(5 * S),
            Some(Due::Differs),
        ),
        (
            "address changed",
            Some(&moved),
            Some(5 * S),
            Some(Due::Differs),
        ),
        (
            "reason changed",
            Some(&reason),
            Some(5 * S),
            Some(Due::Differs),
        ),
        (
            "allocatable changed",
            Some(&less),
            Some(5 * S),
            Some(Due::Differs),
        ),
        (
            "heartbeat due",
            Some(&server()),
            Some(REPORT),
            Some(Due::Heartbeat),
        ),
        ("no server copy yet", None, Some(5 * S), Some(Due::First)),
        (
            "node info missing",
            Some(&with(|s| s.node_info = None)),
            Some(S),
            Some(Due::Differs),
        ),
    ];
    for (name, server, since, want) in cases {
        let got = write_due(&d, server, since, REPORT);
        assert_eq!(got, want, "{name}");
    }
}
