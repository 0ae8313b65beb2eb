use super::*;

#[test]
fn third_owner_waits_until_a_guard_is_dropped() {
    let gauge = Gauge::default();
    let slots = VmSlots::new(2, gauge.clone());
    let a = slots.try_acquire("a").expect("first slot");
    let _b = slots.try_acquire("b").expect("second slot");
    assert!(slots.try_acquire("c").is_none());
    assert_eq!((slots.used(), gauge.get()), (2, 2));
    drop(a);
    assert_eq!((slots.used(), gauge.get()), (1, 1));
    assert!(slots.try_acquire("c").is_some());
}

#[test]
fn an_owner_holds_at_most_one_slot() {
    let slots = VmSlots::new(2, Gauge::default());
    let _a = slots.try_acquire("a").unwrap();
    assert!(slots.try_acquire("a").is_none());
    assert!(slots.acquire_for_adopted("a").is_none());
    assert!(slots.holds("a"));
    assert_eq!(slots.used(), 1);
}

#[test]
fn adopted_vms_count_even_past_the_total() {
    let slots = VmSlots::new(1, Gauge::default());
    let _x = slots.acquire_for_adopted("x").unwrap();
    let _y = slots.acquire_for_adopted("y").unwrap();
    assert_eq!(slots.used(), 2);
    assert!(slots.try_acquire("z").is_none());
}

#[tokio::test]
async fn waiters_are_woken_when_a_slot_frees() {
    let slots = VmSlots::new(1, Gauge::default());
    let a = slots.try_acquire("a").unwrap();
    let mut rx = slots.changed();
    rx.borrow_and_update();
    let waiter = tokio::spawn(async move {
        rx.changed().await.unwrap();
        *rx.borrow()
    });
    drop(a);
    let used = tokio::time::timeout(std::time::Duration::from_secs(1), waiter)
        .await
        .expect("woken")
        .unwrap();
    assert_eq!(used, 0);
}
