//! Measurements from outside the agents: a Node's readiness, RSS and CPU time from `/proc`, and
//! API requests per user from the API server's audit log (one JSON event per line). Parsers are
//! pure.

use std::{collections::HashMap, path::Path};

/// The status of the Node's `Ready` condition (`True`, `False`, `Unknown`), if it has one.
pub fn ready_status(n: &k8s_openapi::api::core::v1::Node) -> Option<&str> {
    n.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready")
        .map(|c| c.status.as_str())
}

/// The Node's `Ready` condition is `True`.
pub fn node_ready(n: &k8s_openapi::api::core::v1::Node) -> bool {
    ready_status(n) == Some("True")
}

/// Resident and peak resident set size (bytes) from `/proc/<pid>/status` text.
pub fn parse_status_rss(status: &str) -> Option<(u64, u64)> {
    let kb = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
    };
    Some((kb("VmRSS:")? * 1024, kb("VmHWM:")? * 1024))
}

/// utime + stime in clock ticks from `/proc/<pid>/stat` text (fields 14 and 15).
pub fn parse_stat_cpu_ticks(stat: &str) -> Option<u64> {
    let n = |i| crate::proc_stat::number::<u64>(stat, i);
    Some(n(14)? + n(15)?)
}

/// RSS, peak RSS (bytes) and CPU seconds of a live process.
pub fn process_usage(pid: u32) -> Option<(u64, u64, f64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (rss, hwm) = parse_status_rss(&status)?;
    let ticks = parse_stat_cpu_ticks(&stat)?;
    let hz = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .unwrap_or(100) as f64;
    Some((rss, hwm, ticks as f64 / hz))
}

/// Counts completed requests per username in audit-log text, only for events whose
/// `requestReceivedTimestamp` is at or after `since_rfc3339` (lexical compare of RFC 3339 UTC
/// timestamps with the same precision is chronological; the API server writes microseconds).
pub fn audit_requests_per_user(log: &str, since_rfc3339: &str) -> HashMap<String, u64> {
    let mut out = HashMap::new();
    for line in log.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if v["stage"] != "ResponseComplete" {
            continue;
        }
        let ts = v["requestReceivedTimestamp"].as_str().unwrap_or("");
        if ts < since_rfc3339 {
            continue;
        }
        if let Some(user) = v["user"]["username"].as_str() {
            *out.entry(user.to_string()).or_default() += 1;
        }
    }
    out
}

/// Now as RFC 3339 UTC with microseconds, the audit log's own format.
pub fn now_rfc3339() -> String {
    k8s_openapi::jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%S%.6fZ")
        .to_string()
}

/// Requests per node per minute made by `user` (all agents share one identity in the sandbox)
/// since `since`, over `minutes`, from the audit log; 0 when there is no audit log.
pub fn api_rate_for_user(path: &Path, since: &str, user: &str, minutes: f64, nodes: u32) -> f64 {
    let counts = audit_requests_per_user(&audit_log(path), since);
    let n = counts.get(user).copied().unwrap_or(0) as f64;
    if minutes <= 0.0 || nodes == 0 {
        return 0.0;
    }
    n / minutes / f64::from(nodes)
}

/// Reads the audit log at `path` (missing file = no requests).
pub fn audit_log(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

#[cfg(test)]
mod tests;
