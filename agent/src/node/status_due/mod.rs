//! PURE: is a Node status write due? The desired status is compared with the *server's*
//! current copy of our Node (from the Node watch), in everything the agent owns: each of our
//! conditions' status, reason and message, the addresses, capacity and allocatable (compared
//! as quantities, since the server rewrites them in canonical form), the daemon endpoints and
//! nodeInfo. Conditions, addresses and resources other writers added are not ours and are
//! ignored (a merge patch could not remove them anyway). An absent list equals an empty one,
//! as in kubelet's comparison (the server omits empty lists). So a
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
pub(crate) enum Due {
    /// Nothing written by this process yet.
    First,
    /// The server's copy differs from the desired status.
    Differs,
    /// The heartbeat (`node_status_report_interval`) is due.
    Heartbeat,
}

impl Due {
    /// Label value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Due::First => "first",
            Due::Differs => "differs",
            Due::Heartbeat => "heartbeat",
        }
    }
}

/// Whether to write `desired` now. `server` is the server's current status (or, while the
/// watch has not shown it, our last write); `since_write` is the time since our last write.
pub(crate) fn write_due(
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
pub(crate) fn owned_differs(desired: &NodeStatus, server: &NodeStatus) -> bool {
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
        || (desired.images.is_some() && !same_list(&desired.images, &server.images))
}

/// Lists compared as kubelet's semantic equality compares them: an absent list and an empty
/// one are the same. The API server omits an empty list (`images` of a Mac that holds none), so
/// what it returns after `[]` was written is an absent list.
fn same_list<T: PartialEq>(a: &Option<Vec<T>>, b: &Option<Vec<T>>) -> bool {
    a.as_deref().unwrap_or_default() == b.as_deref().unwrap_or_default()
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
mod tests;
