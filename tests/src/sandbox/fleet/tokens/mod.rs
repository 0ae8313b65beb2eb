//! The pre-pull tokens as the fleet's Node Leases show them, sampled during the roll. An
//! agent's pull token is an annotation on its own Node Lease, `tart.run/pull-<key>: "<source>
//! <acquired RFC 3339>"` (docs/images.md, "Fleet-wide pacing without a central controller"); a pre-pull that finds it ranks past the
//! cap gives it back and takes a new one on a later try, so the token a node's pull ran under is
//! the last one it took. The roll pre-pulls one image, so every `prepull` token is for it.
//! Pure.

use std::collections::BTreeMap;

use k8s_openapi::{api::coordination::v1::Lease, jiff::Timestamp};

use crate::sandbox::report::fleet::{NodeRoll, Spread};

/// Prefix of the token annotations.
const TOKEN_PREFIX: &str = "tart.run/pull-";

/// The `prepull` tokens on `leases`: (node, when taken).
pub fn prepull_tokens(leases: &[Lease]) -> Vec<(String, Timestamp)> {
    let mut out = Vec::new();
    for l in leases {
        let (Some(node), Some(ann)) = (&l.metadata.name, &l.metadata.annotations) else {
            continue;
        };
        for (k, v) in ann {
            if !k.starts_with(TOKEN_PREFIX) {
                continue;
            }
            if let Some(t) = v
                .strip_prefix("prepull ")
                .and_then(|t| t.parse::<Timestamp>().ok())
            {
                out.push((node.clone(), t));
            }
        }
    }
    out
}

/// What the samples showed, per node.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TokenLog {
    /// The last token each node was seen holding.
    pub last_token: BTreeMap<String, Timestamp>,
    /// When each node was first seen holding the image.
    pub held: BTreeMap<String, Timestamp>,
    /// Most tokens seen in one sample.
    pub peak_tokens: u32,
}

impl TokenLog {
    /// One sample of the Leases' tokens.
    pub fn tokens(&mut self, tokens: &[(String, Timestamp)]) {
        for (node, t) in tokens {
            let e = self.last_token.entry(node.clone()).or_insert(*t);
            *e = (*e).max(*t);
        }
        self.peak_tokens = self.peak_tokens.max(tokens.len() as u32);
    }

    /// `node` holds the image at `now` (only the first sighting counts).
    pub fn holds(&mut self, node: &str, now: Timestamp) {
        self.held.entry(node.to_string()).or_insert(now);
    }

    /// Per node of `nodes`, from the ConfigMap written at `announced`; `refusals` per node.
    pub fn per_node(
        &self,
        nodes: &[String],
        announced: Timestamp,
        refusals: &BTreeMap<String, u64>,
    ) -> BTreeMap<String, NodeRoll> {
        let secs = |a: Timestamp, b: Timestamp| b.duration_since(a).as_secs_f64();
        nodes
            .iter()
            .map(|n| {
                let token = self.last_token.get(n).copied();
                let held = self.held.get(n).copied();
                let roll = NodeRoll {
                    token_wait_seconds: token.map(|t| secs(announced, t)),
                    pull_seconds: token.zip(held).map(|(t, h)| secs(t, h)),
                    refusals: refusals.get(n).copied().unwrap_or(0),
                };
                (n.clone(), roll)
            })
            .collect()
    }
}

/// The spreads of the per-node figures: token waits, pulls, refusals; and the nodes without a
/// token seen.
pub fn spreads(nodes: &BTreeMap<String, NodeRoll>) -> (Spread, Spread, Spread, u32) {
    let waits: Vec<f64> = nodes
        .values()
        .filter_map(|n| n.token_wait_seconds)
        .collect();
    let pulls: Vec<f64> = nodes.values().filter_map(|n| n.pull_seconds).collect();
    let refusals: Vec<f64> = nodes.values().map(|n| n.refusals as f64).collect();
    let without = nodes
        .values()
        .filter(|n| n.token_wait_seconds.is_none())
        .count() as u32;
    (
        Spread::of(&waits),
        Spread::of(&pulls),
        Spread::of(&refusals),
        without,
    )
}

#[cfg(test)]
mod tests;
