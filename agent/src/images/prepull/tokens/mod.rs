//! Fleet-wide pull pacing without a central controller. A pull's token is an annotation on the
//! puller's own Node Lease (`kube-node-lease/<node>`, the heartbeat every agent renews anyway):
//! `tart.run/pull-<12 hex of sha256(image)>: "<source> <acquired RFC 3339>"`. It lives as long
//! as the Lease is renewed, so a crashed holder's token expires with its heartbeat; and it is
//! the one Lease a node identity may write (NodeRestriction). A pre-pull claims first and checks
//! after: it writes its token, and once a consistent list shows that very token it may go on
//! only if fewer than the cap other live tokens for its image are listed beside it; otherwise it
//! gives the token back. Of any set of pre-pulls going on at once, the one whose token was
//! written last listed all the others, so no more than the cap go on at once, whatever the
//! order the writes land in. A Pod's own pull takes its token and never waits, but counts. Pure.

use k8s_openapi::{api::coordination::v1::Lease, jiff::Timestamp};

/// Prefix of token annotations.
pub(crate) const TOKEN_PREFIX: &str = "tart.run/pull-";

/// What a pull is for (a metric label too).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum PullSource {
    /// A Pod needs the image now.
    Pod,
    /// The operators' pre-pull declaration.
    Prepull,
}

impl PullSource {
    /// Every source, for metric label sets.
    pub(crate) const ALL: [Self; 2] = [Self::Pod, Self::Prepull];

    /// Label value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Pod => "pod",
            Self::Prepull => "prepull",
        }
    }
}

/// The first 12 hex digits of the image name's SHA-256: its tokens' annotation key.
pub(crate) fn image_key(image: &str) -> String {
    let d = ring::digest::digest(&ring::digest::SHA256, image.as_bytes());
    d.as_ref()[..6].iter().map(|b| format!("{b:02x}")).collect()
}

/// The annotation key of a token for the image with key `key`.
pub(crate) fn annotation(key: &str) -> String {
    format!("{TOKEN_PREFIX}{key}")
}

/// The annotation value of a token taken at `acquired`.
pub(crate) fn annotation_value(source: PullSource, acquired: Timestamp) -> String {
    format!("{} {acquired}", source.as_str())
}

/// One token as read from a Node Lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Token {
    /// The holding Node (the Lease's name).
    pub node: String,
    /// When it was taken.
    pub acquired: Timestamp,
    /// The Lease's last renewal.
    pub renewed: Timestamp,
    /// Seconds the Lease lives after a renewal.
    pub duration_s: i64,
}

impl Token {
    /// The token for `key` a Node Lease carries, if any.
    pub(crate) fn of(lease: &Lease, key: &str) -> Option<Self> {
        let value = lease.metadata.annotations.as_ref()?.get(&annotation(key))?;
        let acquired = value.split_once(' ')?.1.parse::<Timestamp>().ok()?;
        let spec = lease.spec.as_ref()?;
        Some(Self {
            node: lease.metadata.name.clone()?,
            acquired,
            renewed: spec.renew_time.as_ref()?.0,
            duration_s: i64::from(spec.lease_duration_seconds?),
        })
    }

    /// Whether its holder still counts (its Lease renewed within its duration).
    pub(crate) fn live(&self, now: Timestamp) -> bool {
        now.as_second() < self.renewed.as_second().saturating_add(self.duration_s)
    }
}

/// Live tokens other than `mine`'s.
pub(crate) fn others_live(mine: &str, tokens: &[Token], now: Timestamp) -> usize {
    tokens
        .iter()
        .filter(|t| t.node != mine && t.live(now))
        .count()
}

/// Whether the list shows `mine`'s token taken at `acquired` — the very claim just made, not
/// an earlier token for the same image whose removal has not landed yet.
pub(crate) fn claim_listed(mine: &str, acquired: Timestamp, tokens: &[Token]) -> bool {
    tokens
        .iter()
        .any(|t| t.node == mine && t.acquired == acquired)
}

/// Whether `mine`'s pre-pull, whose token taken at `acquired` is on its Lease, may go on: the
/// list (made after that token was written) shows it, and fewer than `cap` live tokens of other
/// Nodes. Not a ranking: a token written late with an early `acquired` would rank ahead of ones
/// that were already admitted without seeing it.
pub(crate) fn admitted(
    mine: &str,
    acquired: Timestamp,
    tokens: &[Token],
    cap: u32,
    now: Timestamp,
) -> bool {
    claim_listed(mine, acquired, tokens)
        && u32::try_from(others_live(mine, tokens, now)).unwrap_or(u32::MAX) < cap
}

#[cfg(test)]
mod tests;
