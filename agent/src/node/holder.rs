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
pub struct Instance {
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
    pub fn new(machine: Option<&str>, boot: Option<&str>, pid: u32) -> Option<Self> {
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
    pub fn of_holder(holder: &str) -> Option<Self> {
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
pub fn instance_identity(node: &str, me: Option<&Instance>) -> String {
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
pub fn predecessor_gone(me: &Instance, theirs: &Instance, alive: bool) -> bool {
    theirs.host == me.host && (theirs.boot != me.boot || !alive)
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
/// duration (which also covers a clock that runs behind the holder's), and at once when it was
/// not seen renewing and `gone` ([`predecessor_gone`]: it ran on this Mac and cannot renew
/// again). `fallback` is the duration assumed when the Lease does not say; `poll` is the
/// longest wait between readings.
#[allow(clippy::too_many_arguments)] // each is one fact of the decision
pub fn claim_step(
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
            false,
        )
    }

    #[test]
    fn a_gone_predecessor_is_taken_at_once_unless_seen_renewing() {
        let l = r(Some("n_other"), Some(0));
        let gone = |first: &Reading, now_seen: &Reading| {
            claim_step("n_me", first, now_seen, S, at(1), 40 * S, S, true)
        };
        assert_eq!(gone(&l, &l), ClaimStep::Take);
        assert_eq!(
            gone(&l, &r(Some("n_other"), Some(1))),
            ClaimStep::Refuse {
                holder: "n_other".into()
            },
            "a renewal seen outweighs the judgement"
        );
    }

    #[test]
    fn identities_name_the_node_and_differ_per_instance() {
        let a = instance_identity("mini-1", None);
        assert!(a.starts_with("mini-1_"), "{a}");
        assert_ne!(a, instance_identity("mini-1", None));
        assert_eq!(Instance::of_holder(&a), None, "says no instance");
    }

    fn me() -> Instance {
        Instance::new(
            Some("8E3C0B4A-1F2D-4C5B-9A7E-0D1C2B3A4F5E"),
            Some("1bd73bc3-1141-4c26-81df-1bb58c850a7a"),
            4242,
        )
        .unwrap()
    }

    #[test]
    fn an_identity_names_the_mac_boot_and_process_and_reads_back() {
        let i = me();
        assert_eq!(
            (i.host.as_str(), i.boot.as_str()),
            ("8e3c0b4a1f2d", "1bd73bc31141")
        );
        let id = instance_identity("mac-1.ci.example", Some(&i));
        assert!(id.starts_with("mac-1.ci.example_"), "{id}");
        assert!(id.ends_with(".h8e3c0b4a1f2d.b1bd73bc31141.p4242"), "{id}");
        assert_eq!(Instance::of_holder(&id), Some(i));
        for bad in [
            "mac-1_0123456789abcdef",
            "mac-1_0123.h.b1.p2",
            "mac-1_0123.h1.b1.px",
            "mac-1_0123.h1.b1.p2.x",
            "mac-1_0123.x1.b1.p2",
            "no-underscore",
        ] {
            assert_eq!(Instance::of_holder(bad), None, "{bad}");
        }
        assert_eq!(Instance::new(None, Some("b"), 1), None);
        assert_eq!(
            Instance::new(Some("zz"), Some("b"), 1),
            None,
            "no hex digits"
        );
    }

    #[test]
    fn only_a_predecessor_on_this_mac_that_cannot_renew_is_gone() {
        let i = me();
        let other = |host: &str, boot: &str, pid| Instance {
            host: host.into(),
            boot: boot.into(),
            pid,
        };
        let cases = [
            // (theirs, its pid alive, gone)
            (other(&i.host, &i.boot, 100), false, true),
            (other(&i.host, &i.boot, 100), true, false),
            (other(&i.host, "0000aaaa0000", 100), true, true),
            (other("0000bbbb0000", &i.boot, 100), false, false),
            (other("0000bbbb0000", "0000aaaa0000", 100), false, false),
        ];
        for (n, (theirs, alive, want)) in cases.into_iter().enumerate() {
            assert_eq!(predecessor_gone(&i, &theirs, alive), want, "case {n}");
        }
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
        let got = claim_step("n_me", &l, &l, 5 * S, at(39), 40 * S, 10 * S, false);
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
