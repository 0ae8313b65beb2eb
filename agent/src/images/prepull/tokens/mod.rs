//! Fleet-wide pull pacing without a central controller. A pull's token is an annotation on the
//! puller's own Node Lease (`kube-node-lease/<node>`, the heartbeat every agent renews anyway):
//! `tart.run/pull-<12 hex of sha256(image)>: "<source> <acquired RFC 3339>"`. It lives as long
//! as the Lease is renewed, so a crashed holder's token expires with its heartbeat; and it is
//! the one Lease a node identity may write (NodeRestriction). A pre-pull claims first and checks
//! after: it writes its token, and once a consistent list shows that very token it may go on
//! only if fewer than the cap other live tokens for its image are listed beside it (see
//! [`verdict`]). Of any set of pre-pulls going on at once, the one whose token was written last
//! listed all the others, so no more than the cap go on at once, whatever the order the writes
//! land in. A Pod's own pull takes its token and never waits, but counts. Pure.

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

/// What a pre-pull whose token is being written does after a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The list does not show this very claim yet (maybe an earlier token for the image whose
    /// removal has not landed): list again.
    Unwritten,
    /// Fewer than the cap other live tokens beside the claim: the pull goes on.
    Go,
    /// At the cap, but the claim ranks within it (oldest first, then by Node): keep it and list
    /// again, as the claims ranked after it are being given back.
    Recheck,
    /// At the cap and ranked past it: give the token back.
    GiveBack,
}

/// The verdict on `mine`'s token taken at `acquired`, from a list made after it was written.
/// Only a count lets a pull go on: of pre-pulls going on at once, the one written last listed
/// all the others, so they are fewer than the cap. The rank (by `acquired`, stamped before the
/// write) only decides who waits, so that claims made at the same moment do not all give up; a
/// token written late may rank ahead of pulls admitted without seeing it, and then waits.
pub(crate) fn verdict(
    mine: &str,
    acquired: Timestamp,
    tokens: &[Token],
    cap: u32,
    now: Timestamp,
) -> Verdict {
    if !tokens
        .iter()
        .any(|t| t.node == mine && t.acquired == acquired)
    {
        return Verdict::Unwritten;
    }
    if u32::try_from(others_live(mine, tokens, now)).unwrap_or(u32::MAX) < cap {
        return Verdict::Go;
    }
    let mut live: Vec<&Token> = tokens.iter().filter(|t| t.live(now)).collect();
    live.sort_by(|a, b| a.acquired.cmp(&b.acquired).then(a.node.cmp(&b.node)));
    let rank = live.iter().position(|t| t.node == mine);
    if rank.is_some_and(|i| u32::try_from(i).unwrap_or(u32::MAX) < cap) {
        Verdict::Recheck
    } else {
        Verdict::GiveBack
    }
}

#[cfg(test)]
mod tests;
