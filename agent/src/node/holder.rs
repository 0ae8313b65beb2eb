//! Who may hold this Node's Lease. The Lease's `holderIdentity` names the agent
//! *instance* (`<node>_<random id>`, fresh at every start), so two agents configured with the
//! same node name can tell each other apart.
//!
//! At start-up [`claim_step`] decides, from two readings of the Lease taken some time apart,
//! whether to take it, wait for it to expire, or refuse to run: a Lease that another instance
//! keeps renewing belongs to a live agent. The `claim` module does the I/O.

use std::time::Duration;

use k8s_openapi::{api::coordination::v1::Lease, jiff::Timestamp};

/// A fresh holder identity for an agent of node `node`: the node name plus a random id.
pub fn instance_identity(node: &str) -> String {
    format!("{node}_{:016x}", rand::random::<u64>())
}

/// What one reading of the Lease says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reading {
    /// `spec.holderIdentity` (`None` when empty: released).
    pub holder: Option<String>,
    /// `spec.renewTime`.
    pub renew_time: Option<Timestamp>,
    /// `spec.leaseDurationSeconds`.
    pub duration: Option<Duration>,
}

impl Reading {
    /// The reading of `lease`.
    pub fn of(lease: &Lease) -> Self {
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
pub enum ClaimStep {
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
/// duration (which also covers a clock that runs behind the holder's). `fallback` is the
/// duration assumed when the Lease does not say; `poll` is the longest wait between readings.
pub fn claim_step(
    me: &str,
    first: &Reading,
    now_seen: &Reading,
    watched: Duration,
    now: Timestamp,
    fallback: Duration,
    poll: Duration,
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
pub fn held_by_another(me: &str, lease: &Reading) -> Option<String> {
    lease
        .holder
        .as_deref()
        .filter(|h| *h != me)
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + secs).unwrap()
    }

    fn r(holder: Option<&str>, renewed: Option<i64>) -> Reading {
        Reading {
            holder: holder.map(Into::into),
            renew_time: renewed.map(at),
            duration: Some(40 * S),
        }
    }

    fn step(first: &Reading, now_seen: &Reading, watched_s: u64, now_s: i64) -> ClaimStep {
        claim_step(
            "n_me",
            first,
            now_seen,
            S * u32::try_from(watched_s).unwrap(),
            at(now_s),
            40 * S,
            S,
        )
    }

    #[test]
    fn identities_name_the_node_and_differ_per_instance() {
        let a = instance_identity("mini-1");
        assert!(a.starts_with("mini-1_"), "{a}");
        assert_ne!(a, instance_identity("mini-1"));
    }

    #[test]
    fn claim_decisions() {
        let other_fresh = r(Some("n_other"), Some(0));
        let cases = [
            // (first, now, watched s, now s, expected)
            (r(None, Some(0)), r(None, Some(0)), 0, 1, ClaimStep::Take),
            (
                r(Some("n_me"), Some(0)),
                r(Some("n_me"), Some(0)),
                0,
                1,
                ClaimStep::Take,
            ),
            (
                other_fresh.clone(),
                other_fresh.clone(),
                0,
                1,
                ClaimStep::Wait(S),
            ),
            (
                other_fresh.clone(),
                r(Some("n_other"), Some(3)),
                3,
                3,
                ClaimStep::Refuse {
                    holder: "n_other".into(),
                },
            ),
            (
                other_fresh.clone(),
                r(Some("n_third"), Some(0)),
                3,
                3,
                ClaimStep::Refuse {
                    holder: "n_third".into(),
                },
            ),
            // Expired by the clock: a predecessor that died long ago.
            (
                other_fresh.clone(),
                other_fresh.clone(),
                0,
                40,
                ClaimStep::Take,
            ),
            // Not renewed for a whole duration while watched (clock behind the holder's).
            (
                other_fresh.clone(),
                other_fresh.clone(),
                40,
                -100,
                ClaimStep::Take,
            ),
            (
                r(Some("n_other"), None),
                r(Some("n_other"), None),
                0,
                1,
                ClaimStep::Take,
            ),
        ];
        for (i, (first, now_seen, watched, now, want)) in cases.into_iter().enumerate() {
            assert_eq!(step(&first, &now_seen, watched, now), want, "case {i}");
        }
    }

    #[test]
    fn waiting_never_passes_the_expiry() {
        let l = r(Some("n_other"), Some(0));
        let got = claim_step("n_me", &l, &l, 5 * S, at(39), 40 * S, 10 * S);
        assert_eq!(got, ClaimStep::Wait(S));
    }

    #[test]
    fn after_a_failed_renewal_only_another_holder_fences() {
        assert_eq!(
            held_by_another("n_me", &r(Some("n_x"), Some(0))),
            Some("n_x".into())
        );
        assert_eq!(held_by_another("n_me", &r(Some("n_me"), Some(0))), None);
        assert_eq!(held_by_another("n_me", &r(None, Some(0))), None);
    }
}
