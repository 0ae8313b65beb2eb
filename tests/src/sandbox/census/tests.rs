use super::*;

const UID: &str = "0f8e2c1a-3b4d-4e5f-8a9b-0c1d2e3f4a5b";
const OTHER: &str = "1f8e2c1a-3b4d-4e5f-8a9b-0c1d2e3f4a5b";

#[test]
fn only_the_agents_vm_names_carry_a_pod_uid() {
    assert_eq!(pod_uid(&format!("tkl-{UID}")), Some(UID));
    assert_eq!(pod_uid("tkl-short"), None);
    assert_eq!(pod_uid("tkl-golden-150587d8a80285cd1535b85be77d8"), None);
    assert_eq!(pod_uid(&format!("other-{UID}")), None);
}

#[test]
fn one_dir_and_its_run_process_are_one_vm_but_two_of_either_are_a_violation() {
    let one = vec![
        (UID.to_owned(), Seen::Dir("a".into())),
        (UID.to_owned(), Seen::Run("a".into(), 7)),
        (OTHER.to_owned(), Seen::Dir("b".into())),
    ];
    assert!(doubles(one).is_empty());
    let two_dirs = vec![
        (UID.to_owned(), Seen::Dir("b".into())),
        (UID.to_owned(), Seen::Dir("a".into())),
        (OTHER.to_owned(), Seen::Dir("b".into())),
    ];
    let d = doubles(two_dirs);
    assert_eq!(d.len(), 1);
    assert_eq!(d[UID], vec![Seen::Dir("a".into()), Seen::Dir("b".into())]);
    let two_runs = vec![
        (UID.to_owned(), Seen::Run("a".into(), 7)),
        (UID.to_owned(), Seen::Run("a".into(), 8)),
    ];
    assert_eq!(doubles(two_runs).len(), 1);
}

#[test]
fn the_invariant_fails_on_a_violation_and_without_any_sample() {
    let mut c = Census::new(Vec::new());
    assert!(!c.invariant().ok, "no sample is no evidence");
    c.sample();
    assert!(c.invariant().ok);
    c.violations.insert(
        UID.into(),
        vec![Seen::Dir("a".into()), Seen::Dir("b".into())],
    );
    let inv = c.invariant();
    assert!(!inv.ok);
    assert!(inv.detail.contains(UID), "{}", inv.detail);
}
