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
