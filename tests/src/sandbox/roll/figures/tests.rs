use super::*;
use crate::sandbox::metrics::parse;

/// A provision-delay histogram with `fast` observations ≤ 1 s and `slow` in (15, 30].
fn delays(fast: u32, slow: u32) -> Histogram {
    let all = fast + slow;
    let text = format!(
        "tart_kubelet_pod_provision_delay_seconds_bucket{{le=\"1.0\"}} {fast}\n\
             tart_kubelet_pod_provision_delay_seconds_bucket{{le=\"15.0\"}} {fast}\n\
             tart_kubelet_pod_provision_delay_seconds_bucket{{le=\"30.0\"}} {all}\n\
             tart_kubelet_pod_provision_delay_seconds_bucket{{le=\"+Inf\"}} {all}\n\
             tart_kubelet_pod_provision_delay_seconds_count {all}\n\
             tart_kubelet_pod_provision_delay_seconds_sum {}\n",
        f64::from(fast) * 0.5 + f64::from(slow) * 20.0
    );
    let s = parse(&text);
    Histogram::collect(
        [s.as_slice()],
        "tart_kubelet_pod_provision_delay_seconds",
        &[],
    )
}

fn mark(at: f64, h: Histogram) -> Option<Mark> {
    Some(Mark {
        at,
        provision_delay: h,
    })
}

fn event(pod: &str, reason: &str, note: &str) -> PullEvent {
    PullEvent {
        pod: pod.into(),
        reason: reason.into(),
        note: note.into(),
    }
}

fn tick(at: f64, free_warm_slots: u32, active_pulls: u32) -> Tick {
    Tick {
        at,
        free_warm_slots,
        active_pulls,
    }
}

#[test]
fn only_pulls_that_were_not_already_present_count_as_waits() {
    let events = [
        event(
            "runner-0001",
            "Pulled",
            "Container image \"x:v1\" already present on machine",
        ),
        event("runner-0002", "Pulling", "Pulling image \"x:v2\""),
        event(
            "runner-0002",
            "Pulled",
            "Successfully pulled image \"x:v2\" in 12.5s",
        ),
        event(
            "runner-0003",
            "Pulled",
            "Successfully pulled image \"x:v2\" in 1.0s",
        ),
    ];
    let waited = waited_on_pull(&events);
    assert_eq!(
        waited.into_iter().collect::<Vec<_>>(),
        ["runner-0002", "runner-0003"]
    );
    assert_eq!(pod_number("runner-0012"), Some(12));
    assert_eq!(pod_number("demo"), None);
}

#[test]
fn provision_delay_is_split_into_windows_by_the_scrapes_at_each_mark() {
    let course = Course {
        started: mark(0.0, Histogram::default()),
        roll_began: mark(10.0, delays(4, 0)),
        roll_ended: mark(30.0, delays(5, 3)),
        ended: mark(50.0, delays(9, 3)),
        created_at_roll: 5,
        created_at_end: 15,
        completed: true,
        pull_cap: None,
    };
    let f = figures(Strategy::OnDemand, &course, &[], &BTreeSet::new());
    let w = &f.provision_delay_seconds;
    assert_eq!((w.before.count, w.during.count, w.after.count), (4, 4, 4));
    // During the roll 3 of 4 Pods waited 15–30 s; before and after none did.
    assert!(w.during.p99.unwrap() > 15.0, "{w:?}");
    assert!(w.before.p99.unwrap() <= 1.0, "{w:?}");
    assert!(w.after.p99.unwrap() <= 1.0, "{w:?}");
    assert_eq!(w.during.mean, Some((0.5 + 60.0) / 4.0));
    assert_eq!(f.roll_duration_seconds, Some(20.0));
    assert_eq!(f.image_to, "ghcr.io/cirruslabs/macos-tahoe-base:v2");
}

#[test]
fn waits_warm_slots_and_pulls_count_only_from_the_roll_to_the_part_end() {
    let course = Course {
        started: mark(100.0, Histogram::default()),
        roll_began: mark(110.0, Histogram::default()),
        roll_ended: mark(140.0, Histogram::default()),
        ended: mark(160.0, Histogram::default()),
        created_at_roll: 20,
        created_at_end: 30,
        completed: false,
        pull_cap: Some(2),
    };
    let ticks = [
        tick(50.0, 0, 3), // the other strategy's roll
        tick(105.0, 3, 0),
        tick(115.0, 2, 2),
        tick(150.0, 3, 1),
        tick(170.0, 0, 0), // after the part
    ];
    let waited: BTreeSet<String> = ["runner-0012", "runner-0021", "runner-0030", "runner-0031"]
        .map(String::from)
        .into();
    let f = figures(Strategy::Prepull, &course, &ticks, &waited);
    assert_eq!(f.pods_after_roll_began, 10);
    assert_eq!(f.pods_waited_on_pull, 2, "runner-0021 and runner-0030 only");
    assert_eq!(f.min_free_warm_slots, Some(2));
    assert_eq!(f.peak_concurrent_pulls, Some(2));
    assert!(!f.roll_completed);
    assert_eq!(f.pull_cap, Some(2));
    let mut text = String::new();
    render(
        &mut text,
        &ImageRollReport {
            strategies: vec![f],
            ..Default::default()
        },
    );
    assert!(
        text.contains("pre-pull + pacing (v2 -> v3): 2/10 Pods waited"),
        "{text}"
    );
    assert!(text.contains("(bound passed)"), "{text}");
    assert!(text.contains("peak concurrent pulls 2 (cap 2)"), "{text}");
}

#[test]
fn a_part_whose_roll_never_began_has_no_figures() {
    let course = Course {
        started: mark(0.0, Histogram::default()),
        created_at_end: 4,
        ..Course::default()
    };
    let waited: BTreeSet<String> = ["runner-0001".to_string()].into();
    let f = figures(Strategy::OnDemand, &course, &[tick(1.0, 2, 1)], &waited);
    assert_eq!(f.pods_after_roll_began, 0);
    assert_eq!(f.pods_waited_on_pull, 0);
    assert_eq!(f.min_free_warm_slots, None);
    assert_eq!(f.roll_duration_seconds, None);
}
