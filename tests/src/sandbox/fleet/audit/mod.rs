//! The fleet's figures from the API server's audit log (one JSON event per line, level
//! `Metadata`; tests/cluster/start.sh): requests per second by verb and by user over the
//! workload, and per Pod the delay from its binding to the agent's first request about it.
//! Pure: the caller reads the files.

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::jiff::Timestamp;
use serde::Deserialize;

use crate::sandbox::report::fleet::ApiLoad;

/// The scheduler's and the controller-manager's users (tests/cluster/start.sh), and the
/// sandbox's admin.
const SCHEDULER: &str = "system:kube-scheduler";
const CONTROLLER_MANAGER: &str = "system:kube-controller-manager";
const ADMIN: &str = "admin";

/// One completed request, the fields the fleet reads.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    stage: String,
    pub verb: String,
    pub user: User,
    pub object_ref: Option<ObjectRef>,
    pub request_received_timestamp: String,
    pub stage_timestamp: String,
    #[serde(default)]
    pub response_status: Status,
}

/// How it ended.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct Status {
    #[serde(default)]
    pub code: u16,
}

/// Who made it.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct User {
    #[serde(default)]
    pub username: String,
}

/// What it was about.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct ObjectRef {
    #[serde(default)]
    pub resource: String,
    #[serde(default)]
    pub namespace: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub subresource: String,
}

/// The `ResponseComplete` events received in `[since, until)` (RFC 3339 UTC with microseconds,
/// the log's own format, so the lexical order is the chronological one). Lines that do not
/// parse are skipped.
pub fn events(log: &str, since: &str, until: &str) -> Vec<Event> {
    log.lines()
        .filter_map(|l| serde_json::from_str::<Event>(l).ok())
        .filter(|e| e.stage == "ResponseComplete")
        .filter(|e| {
            let t = e.request_received_timestamp.as_str();
            t >= since && t < until
        })
        .collect()
}

/// `t` as the audit log writes its times (RFC 3339 UTC, microseconds).
pub fn stamp(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

/// Who made a request: `agents` (`agents_user`), `scheduler`, `controller_manager`, `sandbox`
/// (the admin: the workload and its observers) or `other`.
pub fn user_class(username: &str, agents_user: &str) -> &'static str {
    match username {
        u if u == agents_user => "agents",
        SCHEDULER => "scheduler",
        CONTROLLER_MANAGER => "controller_manager",
        ADMIN => "sandbox",
        _ => "other",
    }
}

/// Rates over a window of `window_seconds` with `nodes` agents sharing `agents_user`.
pub fn load(events: &[Event], window_seconds: f64, agents_user: &str, nodes: u32) -> ApiLoad {
    let w = window_seconds.max(1e-3);
    let mut by_verb: BTreeMap<String, f64> = BTreeMap::new();
    let mut by_user: BTreeMap<String, f64> = BTreeMap::new();
    let mut agents_by_verb: BTreeMap<String, f64> = BTreeMap::new();
    let mut per_second: HashMap<i64, u64> = HashMap::new();
    for e in events {
        *by_verb.entry(e.verb.clone()).or_default() += 1.0;
        let class = user_class(&e.user.username, agents_user);
        *by_user.entry(class.to_string()).or_default() += 1.0;
        if class == "agents" {
            *agents_by_verb.entry(e.verb.clone()).or_default() += 1.0;
        }
        if let Ok(t) = e.request_received_timestamp.parse::<Timestamp>() {
            *per_second.entry(t.as_second()).or_default() += 1;
        }
    }
    let agents = by_user.get("agents").copied().unwrap_or(0.0);
    for m in [&mut by_verb, &mut by_user, &mut agents_by_verb] {
        m.values_mut().for_each(|v| *v /= w);
    }
    ApiLoad {
        window_seconds,
        requests_per_second: events.len() as f64 / w,
        peak_requests_per_second_10s: peak_10s(&per_second),
        by_verb,
        by_user,
        agents_by_verb,
        agents_per_node_per_minute: if nodes == 0 {
            0.0
        } else {
            agents / (w / 60.0) / f64::from(nodes)
        },
    }
}

/// The busiest 10 consecutive seconds, requests per second (the whole span when shorter).
fn peak_10s(per_second: &HashMap<i64, u64>) -> f64 {
    let (Some(first), Some(last)) = (per_second.keys().min(), per_second.keys().max()) else {
        return 0.0;
    };
    let span = (last - first + 1).min(10);
    (*first..=*last)
        .map(|s| {
            (s..s + span)
                .filter_map(|k| per_second.get(&k))
                .sum::<u64>()
        })
        .max()
        .unwrap_or(0) as f64
        / span as f64
}

/// Per Pod of `ns`, seconds from its binding's completion (the scheduler's `create` of
/// `pods/binding` that succeeded) to the first request `agents_user` made about it (the agent's first act on
/// a bound Pod, its finalizer). Pods without both are left out.
pub fn watch_delays(events: &[Event], ns: &str, agents_user: &str) -> Vec<f64> {
    let mut bound: HashMap<&str, Timestamp> = HashMap::new();
    let mut first: HashMap<&str, Timestamp> = HashMap::new();
    for e in events {
        let Some(o) = e.object_ref.as_ref() else {
            continue;
        };
        if o.resource != "pods" || o.namespace != ns || o.name.is_empty() {
            continue;
        }
        if o.subresource == "binding" && e.verb == "create" {
            // Only a binding that took: a second attempt is refused (409) later.
            if (200..300).contains(&e.response_status.code)
                && let Ok(t) = e.stage_timestamp.parse::<Timestamp>()
            {
                bound.entry(o.name.as_str()).or_insert(t);
            }
        } else if e.user.username == agents_user
            && let Ok(t) = e.request_received_timestamp.parse::<Timestamp>()
        {
            first
                .entry(o.name.as_str())
                .and_modify(|f| *f = (*f).min(t))
                .or_insert(t);
        }
    }
    let mut out: Vec<f64> = bound
        .iter()
        .filter_map(|(pod, b)| {
            let f = first.get(pod)?;
            Some(f.duration_since(*b).as_secs_f64())
        })
        .collect();
    out.sort_by(f64::total_cmp);
    out
}

#[cfg(test)]
mod tests;
