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

fn proc_(pid: u32, ppid: u32, home: &str, vm: &str) -> RunProc {
    RunProc {
        pid,
        ppid,
        home: home.into(),
        vm: vm.into(),
    }
}

#[test]
fn a_child_forked_by_a_run_is_not_a_second_run_but_two_runs_of_the_agent_are() {
    let vm = format!("tkl-{UID}");
    // The guest's shell between fork and exec: the run's argv and home, the run as parent.
    let forked = vec![proc_(494, 300, "/h", &vm), proc_(499, 494, "/h", &vm)];
    assert_eq!(vm_runs(forked), vec![(494, "/h".into(), vm.clone())]);
    // Two runs the agent started: both the agent's children.
    let two = vec![proc_(494, 300, "/h", &vm), proc_(499, 300, "/h", &vm)];
    let runs = vm_runs(two);
    assert_eq!(runs.len(), 2);
    let seen = runs
        .into_iter()
        .map(|(pid, _, vm)| (pod_uid(&vm).unwrap().to_owned(), Seen::Run("a".into(), pid)))
        .collect();
    assert_eq!(doubles(seen).len(), 1);
}

#[test]
fn the_parent_pid_is_read_after_the_command_name() {
    assert_eq!(parent_pid("499 (fake-tart) R 494 499 300 0"), Some(494));
    assert_eq!(parent_pid("7 (a) b (c) S 1 7 7"), Some(1));
    assert_eq!(parent_pid("garbage"), None);
    let own = std::fs::read_to_string("/proc/self/stat").unwrap();
    assert_eq!(parent_pid(&own), Some(std::os::unix::process::parent_id()));
}
