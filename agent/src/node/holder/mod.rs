//! Who may hold this Node's Lease. The Lease's `holderIdentity` names the agent
//! *instance* — `<node>_<random id>`, fresh at every start, so two agents configured with the
//! same node name can tell each other apart — and, when the host says, which Mac, boot and
//! process it is: `<node>_<random id>.h<machine>.b<boot>.p<pid>` ([`Instance`]).
//!
//! At start-up [`claim_step`] decides, from two readings of the Lease taken some time apart,
//! whether to take it, wait for it to expire, or refuse to run: a Lease that another instance
//! keeps renewing belongs to a live agent. A holder that ran on this same Mac and is gone —
//! the Mac booted since, or its process no longer exists (a crash, a `kill -9`, launchd
//! restarting the agent) — cannot renew again, so its Lease is taken at once instead of after
//! it expires ([`predecessor_gone`]). The `claim` module does the I/O.

use std::time::Duration;

use k8s_openapi::{api::coordination::v1::Lease, jiff::Timestamp};

/// Which Mac, boot and process an agent instance is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Instance {
    /// The machine's identifier (its first hex digits).
    pub host: String,
    /// The boot's identifier (its first hex digits).
    pub boot: String,
    /// The agent's process id.
    pub pid: u32,
}

/// How many hex digits of the machine and boot identifiers an identity keeps.
const ID_DIGITS: usize = 12;

impl Instance {
    /// This process on the host whose machine and boot identifiers are `machine` and `boot`;
    /// `None` when either is unknown (or has no hex digits).
    pub(crate) fn new(machine: Option<&str>, boot: Option<&str>, pid: u32) -> Option<Self> {
        let digits = |s: &str| -> Option<String> {
            let d: String = s
                .chars()
                .filter(char::is_ascii_hexdigit)
                .map(|c| c.to_ascii_lowercase())
                .take(ID_DIGITS)
                .collect();
            (!d.is_empty()).then_some(d)
        };
        Some(Self {
            host: digits(machine?)?,
            boot: digits(boot?)?,
            pid,
        })
    }

    /// The instance a holder identity names, if it names one.
    pub(crate) fn of_holder(holder: &str) -> Option<Self> {
        let (_, suffix) = holder.rsplit_once('_')?;
        let mut parts = suffix.split('.');
        let _random = parts.next()?;
        let host = parts.next()?.strip_prefix('h')?;
        let boot = parts.next()?.strip_prefix('b')?;
        let pid = parts.next()?.strip_prefix('p')?.parse().ok()?;
        if parts.next().is_some() || host.is_empty() || boot.is_empty() {
            return None;
        }
        Some(Self {
            host: host.to_owned(),
            boot: boot.to_owned(),
            pid,
        })
    }
}

/// A fresh holder identity for an agent of node `node`: the node name plus a random id, and
/// the instance (`me`) when known.
pub(crate) fn instance_identity(node: &str, me: Option<&Instance>) -> String {
    let mut id = format!("{node}_{:016x}", rand::random::<u64>());
    if let Some(i) = me {
        id.push_str(&format!(".h{}.b{}.p{}", i.host, i.boot, i.pid));
    }
    id
}

/// Whether the holder `theirs` is an agent that can never renew again, seen from `me`: it ran
/// on this same Mac, and the Mac booted since or its process is gone (`alive` says whether a
/// process with its pid exists now). A holder on another Mac, or one that does not say, is
/// never judged gone here: its Lease must expire.
pub(crate) fn predecessor_gone(me: &Instance, theirs: &Instance, alive: bool) -> bool {
    theirs.host == me.host && (theirs.boot != me.boot || !alive)
}

/// What one reading of the Lease says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reading {
    /// `spec.holderIdentity` (`None` when empty: released).
    pub holder: Option<String>,
    /// `spec.renewTime`.
    pub renew_time: Option<Timestamp>,
    /// `spec.leaseDurationSeconds`.
    pub duration: Option<Duration>,
}

impl Reading {
    /// The reading of `lease`.
    pub(crate) fn of(lease: &Lease) -> Self {
        let spec = lease.spec.as_ref();
        Self {
            holder: spec
                .and_then(|s| s.holder_identity.clone())
                .filter(|h| !h.is_empty()),
            renew_time: spec.and_then(|s| s.renew_time.as_ref()).map(|t| t.0),
            duration: spec
                .and_then(|s| s.lease_duration_seconds)
                .and_then(|d| u64::try_from(d).ok())
                .map(Duration::from_secs),
        }
    }
}

/// What to do with the Lease at start-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ClaimStep {
    /// Free, expired or ours: write our identity into it.
    Take,
    /// Another instance is renewing it: do not run this Node.
    Refuse {
        /// The live holder.
        holder: String,
    },
    /// Held by another instance that has not been seen renewing yet: read again after this.
    Wait(Duration),
}

/// Decide from `first` (the first reading, `watched` ago) and `now_seen` (the latest).
///
/// A holder is live when its renewal is *seen*: the renew time (or the holder) changed
/// between the readings. It is gone when its Lease expired by the wall clock
/// (`renewTime + leaseDurationSeconds`) or when no renewal was seen for a whole Lease
/// duration (which also covers a clock that runs behind the holder's), and at once when it was
/// not seen renewing and `gone` ([`predecessor_gone`]: it ran on this Mac and cannot renew
/// again). `fallback` is the duration assumed when the Lease does not say; `poll` is the
/// longest wait between readings.
#[allow(clippy::too_many_arguments)] // each is one fact of the decision
pub(crate) fn claim_step(
    me: &str,
    first: &Reading,
    now_seen: &Reading,
    watched: Duration,
    now: Timestamp,
    fallback: Duration,
    poll: Duration,
    gone: bool,
) -> ClaimStep {
    let Some(holder) = now_seen.holder.as_deref() else {
        return ClaimStep::Take;
    };
    if holder == me {
        return ClaimStep::Take;
    }
    if now_seen.holder != first.holder || now_seen.renew_time != first.renew_time {
        return ClaimStep::Refuse {
            holder: holder.to_owned(),
        };
    }
    if gone {
        return ClaimStep::Take;
    }
    let duration = now_seen.duration.unwrap_or(fallback);
    let Some(renewed) = now_seen.renew_time else {
        return ClaimStep::Take;
    };
    let age = Duration::try_from(now.duration_since(renewed)).unwrap_or(Duration::ZERO);
    if age >= duration || watched >= duration {
        return ClaimStep::Take;
    }
    let left = (duration - age).min(duration - watched);
    ClaimStep::Wait(left.min(poll))
}

/// Whether a Lease read after a failed renewal shows another instance as holder (we are
/// fenced), as opposed to ours with a newer version (retry) or released (take it back).
pub(crate) fn held_by_another(me: &str, lease: &Reading) -> Option<String> {
    lease
        .holder
        .as_deref()
        .filter(|h| *h != me)
        .map(str::to_owned)
}

#[cfg(test)]
mod tests;
