//! The connection cap: the decision as a table, and the table of open connections.

use super::*;

#[test]
fn a_new_connection_at_the_cap_evicts_the_oldest_unauthenticated_or_is_refused() {
    // (open, cap, oldest unauthenticated, arrival)
    let table = [
        (0, 2, None, Arrival::Accept),
        (1, 2, Some(7), Arrival::Accept),
        (2, 2, Some(7), Arrival::Evict(7)),
        (3, 2, Some(3), Arrival::Evict(3)),
        (2, 2, None, Arrival::Refuse),
        (0, 0, None, Arrival::Refuse),
    ];
    for (open, cap, oldest, want) in table {
        assert_eq!(arrival(open, cap, oldest), want, "{open}/{cap} {oldest:?}");
    }
}

#[test]
fn unauthenticated_connections_make_room_and_authenticated_ones_stay() {
    let m = LimitMetrics::default();
    let conns = Conns::new(2, m.clone());
    let (api_server, mut api_evicted) = conns.enter().unwrap();
    api_server.authenticated();
    let (_idle, mut idle_evicted) = conns.enter().unwrap();
    assert_eq!(conns.counts(), (2, 1));

    // At the cap: the idle one goes, the newcomer gets in.
    let (newcomer, _) = conns.enter().unwrap();
    assert_eq!(idle_evicted.try_recv(), Ok(()));
    assert!(
        api_evicted.try_recv().is_err(),
        "authenticated: never evicted"
    );
    assert_eq!(conns.counts(), (2, 1));
    assert_eq!(m.count(Limit::Connections), 1);

    // Both authenticated: the next one is refused.
    newcomer.authenticated();
    assert!(conns.enter().is_none());
    assert_eq!(m.count(Limit::Connections), 2);

    // A place given back is free again.
    drop(newcomer);
    assert_eq!(conns.counts(), (1, 0));
    assert!(conns.enter().is_some());
}

#[test]
fn an_evicted_connection_dropped_later_frees_nothing_twice() {
    let conns = Conns::new(1, LimitMetrics::default());
    let (old, _) = conns.enter().unwrap();
    let (new, _) = conns.enter().unwrap();
    drop(old);
    assert_eq!(conns.counts(), (1, 1));
    drop(new);
    assert_eq!(conns.counts(), (0, 0));
}
