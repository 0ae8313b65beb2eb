//! Table tests of [`super::plan`].

use std::time::{Duration, SystemTime};

use super::*;

const GB: u64 = 1_000_000_000;

fn budget() -> Budget {
    Budget {
        high_percent: 85,
        low_percent: 80,
        max_cache_bytes: Some(300 * GB),
        min_free_bytes: 20 * GB,
    }
}

fn entry(key: &str, gb: u64, age_min: u64, protected: bool) -> Entry {
    Entry {
        key: key.into(),
        bytes: gb * GB,
        last_used: SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000 - age_min * 60),
        protected,
    }
}

fn disk(total_gb: u64, free_gb: u64) -> Disk {
    Disk {
        total_bytes: total_gb * GB,
        free_bytes: free_gb * GB,
    }
}

#[test]
fn the_budget_decides_what_goes() {
    struct Case {
        name: &'static str,
        disk: Disk,
        entries: Vec<Entry>,
        want: Option<(Trigger, u64, &'static [&'static str], u64)>,
    }
    let cases = [
        Case {
            name: "under every threshold: nothing",
            disk: disk(1000, 500),
            entries: vec![entry("a", 100, 60, false)],
            want: None,
        },
        Case {
            name: "past high: free down to low, least recently used first",
            disk: disk(1000, 100), // 90 % used: free 100 GB to reach 80 %
            entries: vec![
                entry("new", 60, 1, false),
                entry("old", 60, 120, false),
                entry("mid", 60, 30, false),
            ],
            want: Some((Trigger::DiskHigh, 100 * GB, &["old", "mid"], 0)),
        },
        Case {
            name: "a protected digest is never evicted, however old",
            disk: disk(1000, 100),
            entries: vec![entry("in-use", 200, 600, true), entry("idle", 60, 5, false)],
            want: Some((Trigger::DiskHigh, 100 * GB, &["idle"], 40 * GB)),
        },
        Case {
            name: "everything protected: nothing evicted, the shortfall said",
            disk: disk(1000, 100),
            entries: vec![entry("a", 200, 600, true)],
            want: Some((Trigger::DiskHigh, 100 * GB, &[], 100 * GB)),
        },
        Case {
            name: "cache over its byte budget on a roomy disk",
            disk: disk(4000, 3000),
            entries: vec![entry("a", 200, 10, false), entry("b", 150, 20, false)],
            want: Some((Trigger::CacheBudget, 50 * GB, &["b"], 0)),
        },
        Case {
            name: "high and floor ask the same: the tie goes to the first trigger",
            disk: disk(100, 5), // 95 % used: down to 80 % is 15 GB; the 20 GB floor is 15 GB too
            entries: vec![entry("a", 10, 10, false), entry("b", 10, 20, false)],
            want: Some((Trigger::DiskHigh, 15 * GB, &["b", "a"], 0)),
        },
        Case {
            name: "high and floor both broken: the larger need wins",
            disk: disk(1000, 10), // 99 % used: down to 80 % is 190 GB; the floor only 10 GB
            entries: vec![entry("a", 300, 10, false)],
            want: Some((Trigger::DiskHigh, 190 * GB, &["a"], 0)),
        },
    ];
    for c in cases {
        let got = plan(&budget(), c.disk, &c.entries)
            .map(|p| (p.trigger, p.need_bytes, p.evict, p.shortfall_bytes));
        let want = c
            .want
            .map(|(t, n, e, s)| (t, n, e.iter().map(|k| (*k).to_owned()).collect(), s));
        assert_eq!(got, want, "{}", c.name);
    }
}

#[test]
fn the_floor_alone_triggers_when_use_is_below_high() {
    let b = Budget {
        min_free_bytes: 50 * GB,
        ..budget()
    };
    let p = plan(&b, disk(200, 40), &[entry("a", 30, 1, false)]).unwrap();
    assert_eq!((p.trigger, p.need_bytes), (Trigger::FreeFloor, 10 * GB));
    assert_eq!(p.evict, ["a"]);
}

#[test]
fn labels_are_distinct() {
    let mut l: Vec<_> = Trigger::ALL.iter().map(|t| t.as_str()).collect();
    l.dedup();
    assert_eq!(l.len(), 3);
}
