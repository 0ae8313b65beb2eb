//! `prober_probe_total` as kubelet exposes it on `/metrics/probes`: one counter per container,
//! probe type and result, labelled with the Pod (`namespace`, `pod`, `pod_uid`, `container`).
//! These labels name Pods, unlike the agent's own metrics: they are kubelet's series, served only
//! on this path, and a Pod's series are removed when the Pod leaves the node
//! ([`ProberCounts::forget`]). The Pod side counts each attempt; this file only keeps and renders
//! the counts.

use std::{
    collections::BTreeMap,
    fmt::Write as _,
    sync::{Arc, Mutex, PoisonError},
};

use super::text::{esc, family};

/// kubelet's `probe_type` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum ProbeType {
    Liveness,
    Readiness,
    Startup,
}

impl ProbeType {
    /// The label value, capitalised as kubelet writes it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Liveness => "Liveness",
            Self::Readiness => "Readiness",
            Self::Startup => "Startup",
        }
    }
}

/// kubelet's `result` label. (kubelet also has `unknown`, for a probe that returned no
/// verdict without an error; this agent's probes always give one.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum ProbeResult {
    Successful,
    Failed,
}

impl ProbeResult {
    /// The label value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Successful => "successful",
            Self::Failed => "failed",
        }
    }
}

/// The container a count belongs to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct ProbedContainer {
    pub namespace: String,
    pub pod: String,
    pub pod_uid: String,
    pub container: String,
}

type Key = (ProbedContainer, ProbeType, ProbeResult);

/// The counts. Clones share them.
#[derive(Debug, Clone, Default)]
pub(crate) struct ProberCounts {
    counts: Arc<Mutex<BTreeMap<Key, u64>>>,
}

impl ProberCounts {
    /// One attempt of `probe` on `c` ended with `result`.
    pub(crate) fn count(&self, c: &ProbedContainer, probe: ProbeType, result: ProbeResult) {
        *self.lock().entry((c.clone(), probe, result)).or_default() += 1;
    }

    /// The Pod `pod_uid` left the node: its series go.
    pub(crate) fn forget(&self, pod_uid: &str) {
        self.lock().retain(|(c, _, _), _| c.pod_uid != pod_uid);
    }

    /// The `prober_probe_total` family (its `# HELP`/`# TYPE` also when empty).
    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        family(
            &mut out,
            "prober_probe_total",
            "counter",
            "Cumulative number of a liveness, readiness or startup probe for a container by result.",
        );
        for ((c, probe, result), n) in self.lock().iter() {
            let _ = writeln!(
                out,
                "prober_probe_total{{container=\"{}\",namespace=\"{}\",pod=\"{}\",pod_uid=\"{}\",probe_type=\"{}\",result=\"{}\"}} {n}",
                esc(&c.container),
                esc(&c.namespace),
                esc(&c.pod),
                esc(&c.pod_uid),
                probe.as_str(),
                result.as_str()
            );
        }
        out
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<Key, u64>> {
        self.counts.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests;
