use super::*;

fn parse(args: &[&str]) -> Opts {
    Opts::parse_args(std::iter::once("sandbox").chain(args.iter().copied())).unwrap()
}

#[test]
fn fleet_takes_its_own_defaults_for_the_options_not_given() {
    let o = parse(&["--scenario", "fleet", "--nodes", "100"]);
    assert_eq!(o.pods, 2000);
    assert_eq!(o.latency_scale, 0.01);
    assert_eq!(o.job_ms, 1_200_000);
    assert_eq!(o.registry_mb_per_s, 1000.0);
    assert_eq!((o.max_concurrent_pulls, o.max_concurrent_percent), (10, 10));
    // 2000 Pods at 4/s: 500 s, twice over, plus 10 minutes.
    assert_eq!(o.timeout_seconds, 1600);
    let given = parse(&[
        "--scenario",
        "fleet",
        "--nodes",
        "3",
        "--pods",
        "20",
        "--latency-scale",
        "0.05",
        "--max-concurrent-pulls",
        "1",
        "--timeout-seconds",
        "60",
        "--job-ms",
        "1000",
    ]);
    assert_eq!(
        (given.pods, given.latency_scale, given.job_ms),
        (20, 0.05, 1000)
    );
    assert_eq!((given.max_concurrent_pulls, given.timeout_seconds), (1, 60));
}

#[test]
fn other_scenarios_keep_the_plain_defaults() {
    let o = parse(&["--scenario", "image-roll", "--nodes", "100"]);
    assert_eq!((o.pods, o.latency_scale, o.job_ms), (30, 0.05, 120_000));
    assert_eq!((o.registry_mb_per_s, o.max_concurrent_pulls), (200.0, 2));
    assert_eq!(o.control_plane_nice, 0);
    assert!(Opts::parse_args(["sandbox", "--scenario", "nope"]).is_err());
}

#[test]
fn steady_runs_the_control_plane_at_a_lower_priority_unless_told_otherwise() {
    assert_eq!(parse(&[]).control_plane_nice, 10);
    assert_eq!(parse(&["--control-plane-nice", "0"]).control_plane_nice, 0);
    assert_eq!(
        parse(&["--control-plane-nice", "-3"]).control_plane_nice,
        -3
    );
    let fleet = parse(&["--scenario", "fleet", "--nodes", "2"]);
    assert_eq!(fleet.control_plane_nice, 0);
    assert!(!parse(&[]).dirs_on_disk);
}
