use std::collections::BTreeMap;

use k8s_openapi::api::coordination::v1::Lease;

use super::*;

fn lease(node: &str, annotations: &[(&str, &str)]) -> Lease {
    let mut l = Lease::default();
    l.metadata.name = Some(node.into());
    l.metadata.annotations = Some(
        annotations
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    l
}

fn ts(s: &str) -> Timestamp {
    s.parse().unwrap()
}

#[test]
fn only_prepull_tokens_are_read_from_the_leases() {
    let leases = [
        lease(
            "mac-1",
            &[("tart.run/pull-0123456789ab", "prepull 2026-11-27T10:00:05Z")],
        ),
        lease(
            "mac-2",
            &[("tart.run/pull-0123456789ab", "pod 2026-11-27T10:00:06Z")],
        ),
        lease(
            "mac-3",
            &[("other/annotation", "prepull 2026-11-27T10:00:07Z")],
        ),
        lease(
            "mac-4",
            &[("tart.run/pull-0123456789ab", "prepull not-a-time")],
        ),
        lease("mac-5", &[]),
    ];
    assert_eq!(
        prepull_tokens(&leases),
        vec![("mac-1".to_string(), ts("2026-11-27T10:00:05Z"))]
    );
}

#[test]
fn a_nodes_wait_is_to_its_last_token_and_its_pull_from_there_to_holding_the_image() {
    let mut log = TokenLog::default();
    // mac-1 takes a token at 5 s; mac-2 takes one at 6 s that ranks past the cap, gives it
    // back, and takes the one its pull runs under at 20 s.
    log.tokens(&[
        ("mac-1".into(), ts("2026-11-27T10:00:05Z")),
        ("mac-2".into(), ts("2026-11-27T10:00:06Z")),
    ]);
    log.tokens(&[("mac-1".into(), ts("2026-11-27T10:00:05Z"))]);
    log.holds("mac-1", ts("2026-11-27T10:00:15Z"));
    log.tokens(&[("mac-2".into(), ts("2026-11-27T10:00:20Z"))]);
    log.holds("mac-1", ts("2026-11-27T10:00:16Z"));
    log.holds("mac-2", ts("2026-11-27T10:00:31Z"));
    assert_eq!(log.peak_tokens, 2);
    let nodes = ["mac-1", "mac-2", "mac-3"].map(String::from);
    let refusals = BTreeMap::from([("mac-2".to_string(), 4)]);
    let per = log.per_node(&nodes, ts("2026-11-27T10:00:00Z"), &refusals);
    assert_eq!(per["mac-1"].token_wait_seconds, Some(5.0));
    assert_eq!(per["mac-1"].pull_seconds, Some(10.0));
    assert_eq!(per["mac-1"].refusals, 0);
    assert_eq!(per["mac-2"].token_wait_seconds, Some(20.0));
    assert_eq!(per["mac-2"].pull_seconds, Some(11.0));
    assert_eq!(per["mac-2"].refusals, 4);
    assert_eq!(per["mac-3"], NodeRoll::default());
    let (waits, pulls, refused, without) = spreads(&per);
    assert_eq!((waits.count, waits.max), (2, Some(20.0)));
    assert_eq!((pulls.count, pulls.min), (2, Some(10.0)));
    assert_eq!((refused.count, refused.max), (3, Some(4.0)));
    assert_eq!(without, 1);
}
