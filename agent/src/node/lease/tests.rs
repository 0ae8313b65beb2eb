use super::*;

fn owner(uid: &str) -> OwnerReference {
    OwnerReference {
        api_version: "v1".into(),
        kind: "Node".into(),
        name: "mini-1".into(),
        uid: uid.into(),
        ..OwnerReference::default()
    }
}

#[test]
fn a_new_lease_is_held_by_the_instance_and_gains_its_owner_on_renewal() {
    let l = new_lease(
        "mini-1",
        "mini-1_a",
        Duration::from_secs(40),
        Timestamp::UNIX_EPOCH,
    );
    let spec = l.spec.as_ref().unwrap();
    assert_eq!(spec.holder_identity.as_deref(), Some("mini-1_a"));
    assert_eq!(spec.lease_duration_seconds, Some(40));
    assert_eq!(spec.lease_transitions, None);
    assert_eq!(l.metadata.namespace.as_deref(), Some("kube-node-lease"));
    assert!(l.metadata.owner_references.is_none());
    let later = Timestamp::from_second(5).unwrap();
    let r = renewed(
        &l,
        "mini-1_a",
        Duration::from_secs(40),
        Some(&owner("u-1")),
        later,
    );
    assert_eq!(r.metadata.owner_references.unwrap()[0].uid, "u-1");
    let spec = r.spec.unwrap();
    assert_eq!(spec.renew_time, Some(MicroTime(later)));
    assert_eq!(spec.acquire_time, Some(MicroTime(Timestamp::UNIX_EPOCH)));
}

#[test]
fn taking_over_counts_a_transition_and_release_keeps_the_renew_time() {
    let l = new_lease("n", "n_old", Duration::from_secs(40), Timestamp::UNIX_EPOCH);
    let t = renewed(
        &l,
        "n_new",
        Duration::from_secs(12),
        None,
        Timestamp::UNIX_EPOCH,
    );
    let spec = t.spec.as_ref().unwrap();
    assert_eq!(spec.lease_transitions, Some(1));
    assert_eq!(spec.lease_duration_seconds, Some(12));
    let rel = released(&t);
    let rs = rel.spec.clone().unwrap();
    assert_eq!(rs.holder_identity, None);
    assert_eq!(rs.renew_time, spec.renew_time);
    // Taking a released Lease is an acquisition but not a transition from a holder.
    let again = renewed(
        &rel,
        "n_next",
        Duration::from_secs(12),
        None,
        Timestamp::UNIX_EPOCH,
    );
    assert_eq!(again.spec.unwrap().lease_transitions, Some(1));
}

#[test]
fn renewals_carry_exactly_the_held_tokens_and_keep_other_annotations() {
    let mut l = new_lease(
        "mac-1",
        "mac-1_a",
        Duration::from_secs(40),
        Timestamp::now(),
    );
    l.metadata.annotations = Some(
        [
            ("keep".to_owned(), "me".to_owned()),
            (format!("{TOKEN_PREFIX}old"), "pod x".to_owned()),
        ]
        .into(),
    );
    let held: HeldTokens = [(format!("{TOKEN_PREFIX}new"), "prepull y".to_owned())].into();
    let a = with_tokens(l.clone(), &held).metadata.annotations.unwrap();
    assert_eq!(a.len(), 2);
    assert_eq!(a["keep"], "me");
    assert_eq!(a[&format!("{TOKEN_PREFIX}new")], "prepull y");
    let none = with_tokens(l, &HeldTokens::new())
        .metadata
        .annotations
        .unwrap();
    assert_eq!(none.len(), 1, "a token given back leaves the Lease");
}

#[test]
fn retry_backoff_doubles_and_is_capped() {
    let i = Duration::from_secs(10);
    assert_eq!(retry_delay(1, i), Duration::from_millis(500));
    assert_eq!(retry_delay(2, i), Duration::from_secs(1));
    assert_eq!(retry_delay(4, i), Duration::from_secs(4));
    assert_eq!(retry_delay(9, i), Duration::from_secs(7));
    assert_eq!(
        retry_delay(9, Duration::from_secs(2)),
        Duration::from_secs(2)
    );
}

#[test]
fn a_server_that_answers_again_is_retried_after_the_first_short_delay() {
    let i = Duration::from_secs(10);
    // An unreachable server: the count grows and the delay with it.
    let mut n = 0;
    for _ in 0..6 {
        n = failures_after(n, false, false);
    }
    assert_eq!(retry_delay(n, i), Duration::from_secs(7));
    // Its first answer, even a failure (a 403 while its authorizer warms up), starts again.
    n = failures_after(n, true, false);
    assert_eq!(retry_delay(n, i), Duration::from_millis(500));
    // A server that keeps answering with failures backs off as usual.
    n = failures_after(n, true, true);
    assert_eq!(retry_delay(n, i), Duration::from_secs(1));
    assert_eq!(failures_after(0, true, true), 1);
}
