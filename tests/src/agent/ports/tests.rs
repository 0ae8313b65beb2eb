use super::*;

#[test]
fn the_ephemeral_range_is_read_and_left_out() {
    assert_eq!(parse_range("32768\t60999\n"), Some((32768, 60999)));
    assert_eq!(parse_range("1024 65535"), Some((1024, 65535)));
    assert_eq!(parse_range("60999 32768"), None);
    assert_eq!(parse_range("x"), None);
    assert_eq!(
        candidates((32768, 60999)),
        vec![10_000..32768, 61000..65536]
    );
    assert_eq!(candidates((1024, 65535)), Vec::<Range<u32>>::new());
    assert_eq!(candidates((20000, 65535)), vec![10_000..20000]);
}

#[test]
fn ports_are_outside_the_ephemeral_range_and_never_handed_out_twice() {
    let ephemeral = ephemeral();
    if candidates(ephemeral).is_empty() {
        return;
    }
    let ports: Vec<u16> = (0..200).map(|_| free_port().unwrap().port()).collect();
    let distinct: std::collections::BTreeSet<_> = ports.iter().collect();
    assert_eq!(distinct.len(), ports.len());
    assert!(
        ports.iter().all(|p| *p < ephemeral.0 || *p > ephemeral.1),
        "{ports:?}"
    );
}
