use super::*;

fn vm(n: u8) -> VmName {
    VmName::new(format!("tkl-{n}")).unwrap()
}

#[test]
fn a_vm_is_running_while_its_listing_lives() {
    let running = RunningVms::default();
    assert!(!running.contains(&vm(1)));
    let one = running.started(&vm(1));
    let two = running.clone().started(&vm(2));
    assert!(running.contains(&vm(1)) && running.contains(&vm(2)));
    drop(one);
    assert!(!running.contains(&vm(1)), "the ended run is unlisted");
    assert!(running.contains(&vm(2)), "the other run stays");
    drop(two);
    assert!(!running.contains(&vm(2)));
}

#[test]
fn a_listing_replaced_by_the_next_of_the_same_vm_does_not_unlist_it() {
    let running = RunningVms::default();
    let old = running.started(&vm(1));
    let new = running.started(&vm(1));
    drop(old);
    assert!(
        running.contains(&vm(1)),
        "the old listing's drop leaves the new one"
    );
    drop(new);
    assert!(!running.contains(&vm(1)));
}
