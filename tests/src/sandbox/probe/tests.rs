use super::*;

#[test]
fn rss_and_peak_come_from_status_in_bytes() {
    let s = "Name:\tagent\nVmHWM:\t   20480 kB\nVmRSS:\t   10240 kB\n";
    assert_eq!(parse_status_rss(s), Some((10240 * 1024, 20480 * 1024)));
    assert_eq!(parse_status_rss("Name: x\n"), None);
}

#[test]
fn cpu_ticks_survive_a_command_name_with_spaces_and_parens() {
    let stat = "1234 (my (odd) name) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 4 0";
    assert_eq!(parse_stat_cpu_ticks(stat), Some(300));
}

#[test]
fn audit_counts_only_completed_requests_after_the_start() {
    let log = [
            r#"{"stage":"ResponseComplete","requestReceivedTimestamp":"2026-11-22T01:00:00.000001Z","user":{"username":"node-a"}}"#,
            r#"{"stage":"ResponseStarted","requestReceivedTimestamp":"2026-11-22T01:00:01.000001Z","user":{"username":"node-a"}}"#,
            r#"{"stage":"ResponseComplete","requestReceivedTimestamp":"2026-11-22T01:00:02.000001Z","user":{"username":"node-a"}}"#,
            r#"{"stage":"ResponseComplete","requestReceivedTimestamp":"2026-11-22T00:59:59.000001Z","user":{"username":"node-b"}}"#,
            "not json",
        ]
        .join("\n");
    let c = audit_requests_per_user(&log, "2026-11-22T01:00:00.000000Z");
    assert_eq!(c.get("node-a"), Some(&2));
    assert_eq!(c.get("node-b"), None);
}
