//! The pre-pull tokens as the fleet's Node Leases show them, event by event. An
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

/// The `prepull` token on one Lease, if any (the roll pre-pulls one image, so one at most).
pub fn prepull_token(lease: &Lease) -> Option<Timestamp> {
    lease
        .metadata
        .annotations
        .as_ref()?
        .iter()
        .filter(|(k, _)| k.starts_with(TOKEN_PREFIX))
        .find_map(|(_, v)| v.strip_prefix("prepull ")?.parse::<Timestamp>().ok())
}

/// What the Leases showed, per node, event by event.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TokenLog {
    /// The last token each node was seen holding.
    pub last_token: BTreeMap<String, Timestamp>,
    /// The token each node holds now.
    current: BTreeMap<String, Timestamp>,
    /// Most nodes seen holding a token at once.
    pub peak_tokens: u32,
}

impl TokenLog {
    /// `node`'s Lease now shows `token` (or none).
    pub fn lease(&mut self, node: &str, token: Option<Timestamp>) {
        match token {
            Some(t) => {
                let last = self.last_token.entry(node.to_string()).or_insert(t);
                *last = (*last).max(t);
                self.current.insert(node.to_string(), t);
            }
            None => {
                self.current.remove(node);
            }
        }
        self.peak_tokens = self.peak_tokens.max(self.current.len() as u32);
    }

    /// Per node of `nodes`, from the ConfigMap written at `announced`; when each node came to
    /// hold the image, and its refusals.
    pub fn per_node(
        &self,
        nodes: &[String],
        announced: Timestamp,
        held: &BTreeMap<String, Timestamp>,
        refusals: &BTreeMap<String, u64>,
    ) -> BTreeMap<String, NodeRoll> {
        let secs = |a: Timestamp, b: Timestamp| b.duration_since(a).as_secs_f64();
        nodes
            .iter()
            .map(|n| {
                let token = self.last_token.get(n).copied();
                let held = held.get(n).copied();
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
