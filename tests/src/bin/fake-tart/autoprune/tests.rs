use std::time::Duration;

use super::*;

fn entry(name: &str, age_s: u64, bytes: u64) -> Prunable {
    Prunable {
        path: PathBuf::from(name),
        accessed: SystemTime::UNIX_EPOCH + Duration::from_secs(1_000 - age_s),
        bytes,
    }
}

fn names(paths: Vec<PathBuf>) -> Vec<String> {
    paths.iter().map(|p| p.display().to_string()).collect()
}

#[test]
fn plan_table() {
    let cache = || {
        vec![
            entry("new", 1, 10),
            entry("old", 100, 10),
            entry("mid", 50, 10),
        ]
    };
    // (required, available, initiator, deleted)
    let cases: &[(u64, u64, Option<&str>, &[&str])] = &[
        (5, 6, None, &[]),
        // Required equal to available is not below it: one byte short needs one entry.
        (6, 6, None, &["old"]),
        (15, 6, None, &["old"]),
        // Exactly one entry's size short: that one is not strictly more, so two go.
        (16, 6, None, &["old", "mid"]),
        (15, 6, Some("old"), &["mid"]),
        (35, 6, Some("old"), &["mid", "new"]),
        // The whole cache (30) is smaller than the 31-byte shortfall: nothing at all.
        (37, 6, None, &[]),
    ];
    for (required, available, initiator, want) in cases {
        let got = plan(*required, *available, cache(), initiator.map(Path::new));
        assert_eq!(
            names(got),
            *want,
            "required {required}, available {available}, initiator {initiator:?}"
        );
    }
}

#[test]
fn required_sizes_follow_the_spec() {
    assert_eq!(pull_required(20), 20 * GB + 128 * MIB);
    assert_eq!(clone_required(50 * GB, 1000, 100), 50 * GB - 1000);
    assert_eq!(clone_required(50 * GB, 0, 10), 10 * 1024 * MIB);
    assert_eq!(clone_required(10, 20, 100), 0);
}
