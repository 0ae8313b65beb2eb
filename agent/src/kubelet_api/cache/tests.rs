use super::*;

#[tokio::test(start_paused = true)]
async fn positive_and_negative_answers_expire_on_their_own_clocks() {
    let mut c = TtlCache::new(Duration::from_secs(300), Duration::from_secs(30));
    c.put("yes", true, true);
    c.put("no", false, false);
    tokio::time::advance(Duration::from_secs(29)).await;
    assert_eq!((c.get(&"yes"), c.get(&"no")), (Some(true), Some(false)));
    tokio::time::advance(Duration::from_secs(2)).await;
    assert_eq!((c.get(&"yes"), c.get(&"no")), (Some(true), None));
    tokio::time::advance(Duration::from_secs(300)).await;
    assert_eq!(c.get(&"yes"), None);
}

#[tokio::test(start_paused = true)]
async fn a_full_cache_stays_bounded() {
    let mut c = TtlCache::new(Duration::from_secs(300), Duration::from_secs(30));
    for i in 0..CAPACITY + 10 {
        c.put(i, i, true);
    }
    assert!(c.entries.len() <= CAPACITY);
    assert_eq!(c.get(&(CAPACITY + 9)), Some(CAPACITY + 9));
}
