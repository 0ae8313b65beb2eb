use super::*;

fn p(pid: i32, ppid: i32, cpu: f64, rss: u64) -> Proc {
    Proc {
        pid,
        ppid,
        cpu_seconds: cpu,
        rss_bytes: rss,
    }
}

#[test]
fn each_vm_sums_its_whole_tree_and_nothing_else() {
    let procs = [
        p(1, 0, 100.0, 1000),
        p(10, 1, 1.0, 10),
        p(11, 10, 2.0, 20),
        p(12, 11, 3.0, 30),
        p(20, 1, 5.0, 50),
        p(21, 20, 0.5, 5),
        p(30, 1, 9.0, 90),
    ];
    let roots = HashMap::from([
        (10, "a".to_owned()),
        (20, "b".to_owned()),
        (99, "gone".to_owned()),
    ]);
    let u = usage_by_vm(&procs, &roots);
    assert_eq!(u.len(), 2);
    assert_eq!(u["a"].rss_bytes, 60);
    assert!((u["a"].cpu_seconds_total - 6.0).abs() < 1e-9);
    assert_eq!(u["b"].rss_bytes, 55);
}

#[test]
fn tart_run_argv_names_its_vm() {
    let argv = |s: &str| s.split(' ').map(str::to_owned).collect::<Vec<_>>();
    assert_eq!(
        tart_run_vm(&argv("/x/fake-tart run tkl-1 --no-graphics --dir a:b")),
        Some("tkl-1")
    );
    assert_eq!(tart_run_vm(&argv("/x/fake-tart list --format json")), None);
    assert_eq!(tart_run_vm(&argv("sh run x")), None);
}

#[test]
fn proc_stat_fields_are_counted_after_the_name() {
    let t = "4242 (fake tart) S 4000 4242 4000 0 -1 4194304 500 0 0 0 150 50 7 3 20 0 3 0 12345 123456789 2048 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";
    assert_eq!(proc_stat(t), Some((4000, 210, 2048, 12345)));
    assert_eq!(proc_stat("garbage"), None);
}
