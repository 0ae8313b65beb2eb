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
fn only_a_prepull_token_is_read_from_a_lease() {
    let read = |ann: &[(&str, &str)]| prepull_token(&lease("mac-1", ann));
    assert_eq!(
        read(&[("tart.run/pull-0123456789ab", "prepull 2026-11-27T10:00:05Z")]),
        Some(ts("2026-11-27T10:00:05Z"))
    );
    assert_eq!(
        read(&[("tart.run/pull-0123456789ab", "pod 2026-11-27T10:00:06Z")]),
        None
    );
    assert_eq!(
        read(&[("other/annotation", "prepull 2026-11-27T10:00:07Z")]),
        None
    );
    assert_eq!(
        read(&[("tart.run/pull-0123456789ab", "prepull not-a-time")]),
        None
    );
    assert_eq!(read(&[]), None);
    assert_eq!(prepull_token(&Lease::default()), None);
}

#[test]
fn a_nodes_wait_is_to_its_last_token_and_its_pull_from_there_to_holding_the_image() {
    let mut log = TokenLog::default();
    // mac-1 takes a token at 5 s; mac-2 takes one at 6 s that ranks past the cap, gives it
    // back, and takes the one its pull runs under at 20 s, after mac-1's pull ended.
    log.lease("mac-1", Some(ts("2026-11-27T10:00:05Z")));
    log.lease("mac-2", Some(ts("2026-11-27T10:00:06Z")));
    log.lease("mac-2", None);
    log.lease("mac-1", Some(ts("2026-11-27T10:00:05Z")));
    log.lease("mac-1", None);
    log.lease("mac-2", Some(ts("2026-11-27T10:00:20Z")));
    log.lease("mac-3", None);
    assert_eq!(log.peak_tokens, 2);
    let nodes = ["mac-1", "mac-2", "mac-3"].map(String::from);
    let held = BTreeMap::from([
        ("mac-1".to_string(), ts("2026-11-27T10:00:15Z")),
        ("mac-2".to_string(), ts("2026-11-27T10:00:31Z")),
    ]);
    let refusals = BTreeMap::from([("mac-2".to_string(), 4)]);
    let per = log.per_node(&nodes, ts("2026-11-27T10:00:00Z"), &held, &refusals);
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
