use super::*;

#[test]
fn proc_stat_busy_leaves_out_idle_and_iowait() {
    let text = "cpu  100 5 50 1000 20 3 2 0 0 0\ncpu0 50 2 25 500 10 1 1 0 0 0\n";
    assert_eq!(parse_proc_stat(text), Some((160, 1180)));
    assert_eq!(parse_proc_stat("intr 1 2 3\n"), None);
}

#[test]
fn pid_stat_reads_own_and_children_ticks_past_a_command_with_spaces() {
    // Fields 14-17: utime 7, stime 3, cutime 40, cstime 2.
    let stat = "42 (tart kubelet) S 1 42 42 0 -1 4194560 100 0 0 0 7 3 40 2 20 0 4 0 5 0 0";
    assert_eq!(parse_pid_stat(stat), Some((10, 42)));
    assert_eq!(parse_pid_stat("42 (x) S 1"), None);
    assert_eq!(parse_loadavg("2.69 1.60 1.73 3/900 1234\n"), Some(2.69));
}

#[test]
fn shares_are_percent_of_one_core_and_the_rest_is_what_no_known_process_used() {
    let a = Sample {
        at: 10.0,
        machine_busy_ticks: 1000,
        machine_total_ticks: 10_000,
        components: [1.0, 2.0, 0.0, 0.0],
        agents: 5.0,
        agents_children: 1.0,
        sandbox: 0.5,
        load: 1.0,
    };
    let b = Sample {
        at: 110.0,
        // Half the ticks of 2 cores busy: 100 % of one core.
        machine_busy_ticks: 11_000,
        machine_total_ticks: 30_000,
        components: [31.0, 12.0, 1.0, 2.0],
        agents: 15.0,
        agents_children: 6.0,
        sandbox: 1.5,
        load: 3.0,
    };
    let s = shares(&a, &b, 2);
    assert!((s.machine_busy - 100.0).abs() < 1e-9, "{s:?}");
    assert!((s.kube_apiserver - 30.0).abs() < 1e-9);
    assert!((s.etcd - 10.0).abs() < 1e-9);
    assert!((s.agents - 10.0).abs() < 1e-9);
    assert!((s.agents_children - 5.0).abs() < 1e-9);
    assert!((s.sandbox - 1.0).abs() < 1e-9);
    // 100 - (30 + 10 + 1 + 2 + 10 + 5 + 1)
    assert!((s.rest - 41.0).abs() < 1e-9, "{s:?}");
    assert_eq!((s.load_average_start, s.load_average_end), (1.0, 3.0));
    assert!((s.window_seconds - 100.0).abs() < 1e-9);
}
