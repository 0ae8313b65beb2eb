use super::*;

const TEXT: &str = r#"# HELP tart_kubelet_vm_boot_duration_seconds Boot.
# TYPE tart_kubelet_vm_boot_duration_seconds histogram
tart_kubelet_vm_boot_duration_seconds_sum 30.0
tart_kubelet_vm_boot_duration_seconds_count 4
tart_kubelet_vm_boot_duration_seconds_bucket{le="1.0"} 0
tart_kubelet_vm_boot_duration_seconds_bucket{le="5.0"} 2
tart_kubelet_vm_boot_duration_seconds_bucket{le="15.0"} 4
tart_kubelet_vm_boot_duration_seconds_bucket{le="+Inf"} 4
tart_kubelet_tart_commands_total{command="clone",outcome="ok"} 7
tart_kubelet_tart_commands_total{command="clone",outcome="timeout"} 2
tart_kubelet_build_info{version="0.1.0",tart_version="a \"q\", b"} 1
# EOF
"#;

#[test]
fn parses_labels_with_escaped_quotes_and_commas() {
    let s = parse(TEXT);
    let info = s
        .iter()
        .find(|s| s.name == "tart_kubelet_build_info")
        .unwrap();
    assert_eq!(info.label("tart_version"), Some("a \"q\", b"));
    assert_eq!(info.value, 1.0);
}

#[test]
fn quantile_interpolates_inside_the_bucket_like_promql() {
    let s = parse(TEXT);
    let h = Histogram::collect([s.as_slice()], "tart_kubelet_vm_boot_duration_seconds", &[]);
    assert_eq!(h.count, 4.0);
    // rank 2 of 4 is the top of the (1,5] bucket.
    assert_eq!(h.quantile(0.5), Some(5.0));
    // rank 3 is half-way through (5,15].
    assert_eq!(h.quantile(0.75), Some(10.0));
    assert_eq!(h.mean(), Some(7.5));
}

#[test]
fn histograms_add_up_across_agents_and_counters_filter_by_label() {
    let s = parse(TEXT);
    let h = Histogram::collect(
        [s.as_slice(), s.as_slice()],
        "tart_kubelet_vm_boot_duration_seconds",
        &[],
    );
    assert_eq!(h.count, 8.0);
    let timeouts = sum(
        [s.as_slice()],
        "tart_kubelet_tart_commands_total",
        &[("outcome", "timeout")],
    );
    assert_eq!(timeouts, 2.0);
}

#[test]
fn empty_histogram_has_no_quantile() {
    assert_eq!(Histogram::default().quantile(0.5), None);
}
