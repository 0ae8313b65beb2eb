use super::*;

#[test]
fn recovery_is_the_first_agent_status_after_the_last_unknown() {
    type Observations = &'static [(f64, bool)];
    let table: [(Observations, Option<f64>); 6] = [
        (&[], None),
        (&[(0.2, true), (0.4, true)], Some(0.2)),
        // A stale status before the controller marks the Node Unknown does not count.
        (
            &[(0.2, true), (1.0, false), (3.5, true), (3.7, true)],
            Some(3.5),
        ),
        (
            &[(0.2, false), (0.4, true), (0.6, false), (9.0, true)],
            Some(9.0),
        ),
        (&[(0.2, true), (0.4, false)], None),
        (&[(0.2, false)], None),
    ];
    for (obs, want) in table {
        assert_eq!(recovered_at(obs), want, "{obs:?}");
    }
}

#[test]
fn the_slowest_node_is_the_max_and_a_node_that_never_recovered_makes_it_none() {
    let mut r = ApiRestartRecord::default();
    r.node_recovered_after_seconds.insert("a".into(), Some(1.5));
    r.node_recovered_after_seconds.insert("b".into(), Some(4.0));
    assert_eq!(r.max_ready_after(), Some(4.0));
    r.node_recovered_after_seconds.insert("c".into(), None);
    assert_eq!(r.max_ready_after(), None);
}
