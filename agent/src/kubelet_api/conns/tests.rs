//! The connection cap: the decisions as tables, and the table of open connections.

use super::*;

#[test]
fn a_new_connection_at_the_cap_closes_another_or_is_refused() {
    // (live, closing, cap, victim, arrival)
    let table = [
        (0, 0, 2, None, Arrival::Accept),
        (1, 0, 2, Some(7), Arrival::Accept),
        (2, 0, 2, Some(7), Arrival::Evict(7)),
        (3, 5, 2, Some(3), Arrival::Evict(3)),
        (2, 0, 2, None, Arrival::Refuse),
        (0, 0, 0, None, Arrival::Refuse),
        // Too many sockets still closing: wait until they are released.
        (2, CLOSING_MAX, 2, Some(7), Arrival::Wait),
        (1, CLOSING_MAX + 1, 2, Some(7), Arrival::Wait),
        (2, CLOSING_MAX, 2, None, Arrival::Wait),
        (1, CLOSING_MAX, 2, Some(7), Arrival::Accept),
    ];
    for (live, closing, cap, victim, want) in table {
        assert_eq!(
            arrival(live, closing, cap, victim),
            want,
            "{live}+{closing}/{cap} {victim:?}"
        );
    }
}

#[test]
fn the_oldest_unauthenticated_connection_goes_before_a_handshaking_one() {
    assert_eq!(victim(Some(9), Some(2)), Some(9));
    assert_eq!(victim(None, Some(2)), Some(2));
    assert_eq!(victim(None, None), None);
}

#[tokio::test]
async fn unauthenticated_connections_make_room_and_authenticated_ones_stay() {
    let m = LimitMetrics::default();
    let conns = Conns::new(3, m.clone());
    let (api_server, mut api_evicted) = conns.enter().await.unwrap();
    api_server.authenticated();
    let (handshaking, mut handshaking_evicted) = conns.enter().await.unwrap();
    let (idle, mut idle_evicted) = conns.enter().await.unwrap();
    idle.handshaken();
    assert_eq!(conns.counts(), (3, 2, 0));

    // At the cap: the idle one (handshake done, no credentials) goes first.
    let (newcomer, _) = conns.enter().await.unwrap();
    assert_eq!(idle_evicted.try_recv(), Ok(()));
    assert!(handshaking_evicted.try_recv().is_err());
    assert!(
        api_evicted.try_recv().is_err(),
        "authenticated: never closed"
    );
    assert_eq!(conns.counts(), (3, 2, 1));
    assert_eq!(m.count(Limit::Connections), 1);
    drop(idle);
    assert_eq!(conns.counts(), (3, 2, 0), "its socket is released");

    // Then the oldest handshaking one.
    let (_next, _) = conns.enter().await.unwrap();
    assert_eq!(handshaking_evicted.try_recv(), Ok(()));
    drop(handshaking);

    // Everyone authenticated: the next one is refused.
    newcomer.authenticated();
    _next.authenticated();
    assert!(conns.enter().await.is_none());
    assert_eq!(m.count(Limit::Connections), 3);
    assert!(api_server.is_authenticated());

    // A place given back is free again.
    drop(newcomer);
    assert_eq!(conns.counts(), (2, 0, 0));
    assert!(conns.enter().await.is_some());
}

#[tokio::test(start_paused = true)]
async fn a_new_connection_waits_while_too_many_sockets_are_closing() {
    let conns = Conns::new(1, LimitMetrics::default());
    let mut closing = Vec::new();
    let (mut last, _) = conns.enter().await.unwrap();
    for _ in 0..CLOSING_MAX {
        let (next, _) = conns.enter().await.unwrap();
        closing.push(std::mem::replace(&mut last, next));
    }
    assert_eq!(conns.counts(), (1, 1, CLOSING_MAX));

    // It waits for a released socket, then gets in.
    let waiting = tokio::spawn({
        let conns = conns.clone();
        async move { conns.enter().await.map(|(e, _)| e) }
    });
    tokio::task::yield_now().await;
    assert!(!waiting.is_finished());
    closing.pop();
    let entered = tokio::time::timeout(Duration::from_millis(100), waiting)
        .await
        .expect("let in once a socket was released")
        .unwrap();
    assert!(entered.is_some());

    // Nothing released within the wait: closed.
    let started = tokio::time::Instant::now();
    assert!(conns.enter().await.is_none());
    assert_eq!(started.elapsed(), CLOSING_WAIT);
}
