//! Fleet-wide pull pacing without a central controller: every agent pulling an image holds a
//! `coordination.k8s.io` Lease named for the image and its Node while the pull runs, renews it,
//! and deletes it when the pull ends; a crashed holder's Lease expires by itself. A pre-pull may
//! go on only while it ranks within the cap among the unexpired Leases for its image (oldest
//! first), so two agents that take a token at the same moment cannot both overrun it: the later
//! one gives it back. A Pod's own pull takes its Lease and never waits, but counts. Pure.

use k8s_openapi::{api::coordination::v1::Lease, jiff::Timestamp};

/// Label naming the image a token Lease is for (a hash: image names are not label values).
pub const IMAGE_LABEL: &str = "tart.run/pull-image";
/// Label naming what the pull is for.
pub const SOURCE_LABEL: &str = "tart.run/pull-source";

/// What a pull is for (a metric label too).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PullSource {
    /// A Pod needs the image now.
    Pod,
    /// The operators' pre-pull declaration.
    Prepull,
}

impl PullSource {
    /// Every source, for metric label sets.
    pub const ALL: [Self; 2] = [Self::Pod, Self::Prepull];

    /// Label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pod => "pod",
            Self::Prepull => "prepull",
        }
    }
}

/// The first 12 hex digits of the image name's SHA-256: its token Leases' label and names.
pub fn image_key(image: &str) -> String {
    let d = ring::digest::digest(&ring::digest::SHA256, image.as_bytes());
    d.as_ref()[..6].iter().map(|b| format!("{b:02x}")).collect()
}

/// The token Lease of `node` pulling the image with key `key`; a Node name too long for the
/// object name is replaced by its own hash.
pub fn lease_name(key: &str, node: &str) -> String {
    let name = format!("tart-pull-{key}-{node}");
    if name.len() <= 253 {
        name
    } else {
        format!("tart-pull-{key}-{}", image_key(node))
    }
}

/// One token as read from the API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// The Lease's name.
    pub name: String,
    /// When it was taken.
    pub created: Timestamp,
    /// Last renewal.
    pub renewed: Timestamp,
    /// Seconds it lives after a renewal.
    pub duration_s: i64,
}

impl Token {
    /// The token of a Lease, if it carries the times a token needs.
    pub fn of(lease: &Lease) -> Option<Self> {
        let spec = lease.spec.as_ref()?;
        let renewed = spec.renew_time.as_ref().or(spec.acquire_time.as_ref())?.0;
        Some(Self {
            name: lease.metadata.name.clone()?,
            created: spec.acquire_time.as_ref().map_or(renewed, |t| t.0),
            renewed,
            duration_s: i64::from(spec.lease_duration_seconds?),
        })
    }

    /// Whether its holder still counts (renewed within its duration).
    pub fn live(&self, now: Timestamp) -> bool {
        now.as_second() < self.renewed.as_second().saturating_add(self.duration_s)
    }
}

/// Whether the token named `mine` ranks within `cap` among the live tokens (oldest first, then
/// by name), i.e. its pre-pull may go on. A token that is not (yet) listed is not admitted.
pub fn admitted(mine: &str, tokens: &[Token], cap: u32, now: Timestamp) -> bool {
    let mut live: Vec<&Token> = tokens.iter().filter(|t| t.live(now)).collect();
    live.sort_by(|a, b| a.created.cmp(&b.created).then(a.name.cmp(&b.name)));
    live.iter()
        .position(|t| t.name == mine)
        .is_some_and(|i| u32::try_from(i).unwrap_or(u32::MAX) < cap)
}

#[cfg(test)]
#[path = "tokens_tests.rs"]
mod tests;
