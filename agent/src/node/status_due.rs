//! PURE: is a Node status write due? The desired status is compared with the *server's*
//! current copy of our Node (from the Node watch), in everything the agent owns: each of our
//! conditions' status, reason and message, the addresses, capacity and allocatable (compared
//! as quantities, since the server rewrites them in canonical form), the daemon endpoints and
//! nodeInfo. Conditions, addresses and resources other writers added are not ours and are
//! ignored (a merge patch could not remove them anyway). So a
//! controller that set our conditions to `Unknown` during an API outage is corrected on the
//! next check, not at the next heartbeat.

use std::{collections::BTreeMap, time::Duration};

use k8s_openapi::{
    api::core::v1::{NodeCondition, NodeStatus},
    apimachinery::pkg::api::resource::Quantity,
};

use crate::quantity::parse_scaled;

/// Why a status write is due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Due {
    /// Nothing written by this process yet.
    First,
    /// The server's copy differs from the desired status.
    Differs,
    /// The heartbeat (`node_status_report_interval`) is due.
    Heartbeat,
}

impl Due {
    /// Label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Due::First => "first",
            Due::Differs => "differs",
            Due::Heartbeat => "heartbeat",
        }
    }
}

/// Whether to write `desired` now. `server` is the server's current status (or, while the
/// watch has not shown it, our last write); `since_write` is the time since our last write.
pub fn write_due(
    desired: &NodeStatus,
    server: Option<&NodeStatus>,
    since_write: Option<Duration>,
    report_interval: Duration,
) -> Option<Due> {
    let (Some(since), Some(server)) = (since_write, server) else {
        return Some(Due::First);
    };
    if owned_differs(desired, server) {
        Some(Due::Differs)
    } else if since >= report_interval {
        Some(Due::Heartbeat)
    } else {
        None
    }
}

/// Whether `server` differs from `desired` in anything the agent owns.
pub fn owned_differs(desired: &NodeStatus, server: &NodeStatus) -> bool {
    !conditions_match(desired.conditions.as_deref(), server.conditions.as_deref())
        || !resources_match(desired.capacity.as_ref(), server.capacity.as_ref())
        || !resources_match(desired.allocatable.as_ref(), server.allocatable.as_ref())
        || !desired
            .addresses
            .iter()
            .flatten()
            .all(|a| server.addresses.iter().flatten().any(|b| b == a))
        || (desired.daemon_endpoints.is_some()
            && desired.daemon_endpoints != server.daemon_endpoints)
        || (desired.node_info.is_some() && desired.node_info != server.node_info)
        || (desired.images.is_some() && desired.images != server.images)
}

fn conditions_match(desired: Option<&[NodeCondition]>, server: Option<&[NodeCondition]>) -> bool {
    let server = server.unwrap_or_default();
    desired.unwrap_or_default().iter().all(|d| {
        server.iter().any(|s| {
            s.type_ == d.type_
                && s.status == d.status
                && s.reason == d.reason
                && s.message == d.message
        })
    })
}

fn resources_match(
    desired: Option<&BTreeMap<String, Quantity>>,
    server: Option<&BTreeMap<String, Quantity>>,
) -> bool {
    let Some(desired) = desired else { return true };
    let Some(server) = server else {
        return desired.is_empty();
    };
    desired.iter().all(|(k, want)| {
        server.get(k).is_some_and(|have| {
            have == want
                || parse_scaled(&have.0, 1000)
                    .is_some_and(|h| parse_scaled(&want.0, 1000) == Some(h))
        })
    })
}

#[cfg(test)]
mod tests {
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
        s.conditions.get_or_insert_default().push(cond(
            "NetworkUnavailable",
            "False",
            "RouteCreated",
        ));
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
}
