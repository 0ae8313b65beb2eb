use std::time::Duration;

use prometheus_client::{encoding::text::encode, registry::Registry};
use tart::{Attempt, AttemptOutcome, ErrorKind, Observer, Op};

use super::*;

fn setup() -> (Registry, PodMetrics) {
    let mut r = Registry::default();
    let m = PodMetrics::register(&mut r);
    (r, m)
}

fn text(r: &Registry) -> String {
    let mut s = String::new();
    encode(&mut s, r).unwrap();
    s
}

fn line<'a>(t: &'a str, prefix: &str) -> &'a str {
    t.lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line starting with {prefix}\n{t}"))
}

#[test]
fn agreed_names_are_exposed_from_the_first_scrape() {
    let (r, _m) = setup();
    let t = text(&r);
    for name in [
        "tart_kubelet_pod_provision_delay_seconds_count 0",
        "tart_kubelet_vm_boot_duration_seconds_count 0",
        "tart_kubelet_pod_stage_duration_seconds_count{stage=\"pull\"} 0",
        "tart_kubelet_tart_commands_total{command=\"clone\",outcome=\"timeout\"} 0",
        "tart_kubelet_tart_retries_total{command=\"pull\"} 0",
        "tart_kubelet_tart_kills_total{command=\"clone\"} 0",
        "tart_kubelet_host_faults_total{kind=\"vm_limit\"} 0",
        "tart_kubelet_pods_pending{age=\"gt_4h\"} 0",
        "tart_kubelet_vms{state=\"running\"} 0",
        "tart_kubelet_reconciles_total{outcome=\"ok\"} 0",
        "tart_kubelet_pod_admission_rejections_total{reason=\"container_count\"} 0",
        "tart_kubelet_pod_starts_total{outcome=\"ok\"} 0",
        "tart_kubelet_vm_exits_total{reason=\"completed\"} 0",
        "tart_kubelet_pod_termination_seconds_count{how=\"grace_expired\"} 0",
    ] {
        assert!(t.contains(name), "missing {name}\n{t}");
    }
    assert!(t.contains("le=\"14400.0\""), "buckets must reach 4 h");
}

#[test]
fn a_killed_and_retried_clone_counts_attempt_retry_kill_and_error() {
    let (r, m) = setup();
    m.attempt(&Attempt {
        op: Op::Clone,
        attempt: 1,
        outcome: AttemptOutcome::Error(ErrorKind::Timeout),
        elapsed: Duration::from_secs(5),
        killed: true,
        will_retry: true,
    });
    m.attempt(&Attempt {
        op: Op::Clone,
        attempt: 2,
        outcome: AttemptOutcome::Ok,
        elapsed: Duration::from_millis(300),
        killed: false,
        will_retry: false,
    });
    let t = text(&r);
    assert!(
        t.contains("tart_kubelet_tart_commands_total{command=\"clone\",outcome=\"timeout\"} 1")
    );
    assert!(t.contains("tart_kubelet_tart_commands_total{command=\"clone\",outcome=\"ok\"} 1"));
    assert!(t.contains("tart_kubelet_tart_retries_total{command=\"clone\"} 1"));
    assert!(t.contains("tart_kubelet_tart_kills_total{command=\"clone\"} 1"));
    assert!(t.contains("tart_kubelet_tart_errors_total{command=\"clone\",kind=\"timeout\"} 1"));
}

#[test]
fn pod_histograms_are_observed_once_per_pod() {
    let (r, m) = setup();
    let mut once = PodOnce::default();
    assert!(
        !once.boot(&m, Duration::from_secs(1)),
        "boot before provision"
    );
    assert!(once.provision(&m, Duration::from_secs(30)));
    assert!(once.boot(&m, Duration::from_secs(12)));
    // A crash-loop restart runs and boots again: nothing more is observed.
    assert!(!once.provision(&m, Duration::from_secs(300)));
    assert!(!once.boot(&m, Duration::from_secs(12)));
    let t = text(&r);
    assert_eq!(
        line(&t, "tart_kubelet_pod_provision_delay_seconds_count"),
        "tart_kubelet_pod_provision_delay_seconds_count 1"
    );
    assert_eq!(
        line(&t, "tart_kubelet_vm_boot_duration_seconds_count"),
        "tart_kubelet_vm_boot_duration_seconds_count 1"
    );
}

#[test]
fn an_adopted_vm_is_never_observed() {
    let (r, m) = setup();
    let mut once = PodOnce::adopted();
    assert!(!once.provision(&m, Duration::from_secs(1)));
    assert!(!once.boot(&m, Duration::from_secs(1)));
    let t = text(&r);
    assert!(t.contains("tart_kubelet_pod_provision_delay_seconds_count 0"));
    assert!(t.contains("tart_kubelet_vm_boot_duration_seconds_count 0"));
}

#[test]
fn a_boot_after_the_first_run_died_without_an_ip_is_a_retry_and_never_observed() {
    let (r, m) = setup();
    let mut once = PodOnce::default();
    assert!(once.provision(&m, Duration::from_secs(3)));
    once.run_ended(); // the guest crashed before it had an address
    assert!(
        !once.boot(&m, Duration::from_secs(1)),
        "restart's boot counted"
    );
    let t = text(&r);
    assert!(t.contains("tart_kubelet_pod_provision_delay_seconds_count 1"));
    assert!(t.contains("tart_kubelet_vm_boot_duration_seconds_count 0"));
    // A run that ends after its boot was observed changes nothing.
    let mut once = PodOnce::default();
    assert!(once.provision(&m, Duration::from_secs(3)));
    assert!(once.boot(&m, Duration::from_secs(1)));
    once.run_ended();
    assert!(text(&r).contains("tart_kubelet_vm_boot_duration_seconds_count 1"));
}

#[test]
fn pending_ages_fall_in_their_buckets() {
    assert_eq!(age_bucket(Duration::from_secs(59)), "lt_1m");
    assert_eq!(age_bucket(Duration::from_secs(60)), "1m_5m");
    assert_eq!(age_bucket(Duration::from_secs(899)), "5m_15m");
    assert_eq!(age_bucket(Duration::from_secs(3599)), "15m_1h");
    assert_eq!(age_bucket(Duration::from_secs(3 * 3600)), "1h_4h");
    assert_eq!(age_bucket(Duration::from_secs(5 * 3600)), "gt_4h");
    let (r, m) = setup();
    m.set_population(
        &[
            Duration::from_secs(5),
            Duration::from_secs(10),
            Duration::from_secs(5 * 3600),
        ],
        [1, 2, 0],
    );
    let t = text(&r);
    assert!(t.contains("tart_kubelet_pods_pending{age=\"lt_1m\"} 2"));
    assert!(t.contains("tart_kubelet_pods_pending{age=\"gt_4h\"} 1"));
    assert!(t.contains("tart_kubelet_vms{state=\"running\"} 2"));
    m.set_population(&[], [0, 0, 0]);
    assert!(text(&r).contains("tart_kubelet_pods_pending{age=\"lt_1m\"} 0"));
}

#[test]
fn only_host_fault_kinds_count_as_host_faults() {
    let (r, m) = setup();
    m.host_fault(ErrorKind::VmLimit);
    m.host_fault(ErrorKind::NotFound);
    let t = text(&r);
    assert!(t.contains("tart_kubelet_host_faults_total{kind=\"vm_limit\"} 1"));
    assert!(!t.contains("kind=\"not_found\""));
}
