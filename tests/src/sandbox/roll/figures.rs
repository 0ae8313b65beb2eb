//! The `image-roll` report's per-strategy figures, computed from what the run recorded: its
//! course (when each part began and ended, with the agents' provision-delay histograms summed
//! at each of those moments), the per-tick fleet samples and the Pods' pull Events. Pure.

use std::collections::BTreeSet;

use serde::Serialize;

use super::stage::Strategy;
use crate::sandbox::{metrics::Histogram, report::Percentiles};

/// One workload tick's look at the fleet.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tick {
    /// Seconds since the workload started.
    pub at: f64,
    /// Free VM slots on the Macs that hold the image the Pods use now.
    pub free_warm_slots: u32,
    /// Pulls downloading from the shared registry.
    pub active_pulls: u32,
}

/// The moments of one strategy's part of the run, in seconds since the workload started, and
/// the provision-delay histogram (summed over agents) at each.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Course {
    /// The part started.
    pub started: Option<Mark>,
    pub roll_began: Option<Mark>,
    pub roll_ended: Option<Mark>,
    /// The part ended.
    pub ended: Option<Mark>,
    /// Pods created when the roll began.
    pub created_at_roll: u64,
    /// Pods created when the part ended.
    pub created_at_end: u64,
    /// The fleet held the new image when the roll ended (the bound did not pass first).
    pub completed: bool,
    /// The pre-pull's concurrency cap (pre-pull only).
    pub pull_cap: Option<u32>,
}

/// A moment of the course.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Mark {
    /// Seconds since the workload started.
    pub at: f64,
    /// `tart_kubelet_pod_provision_delay_seconds`, summed over agents, then.
    pub provision_delay: Histogram,
}

/// A Pod's pull Event (`Pulling`, `Pulled`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullEvent {
    pub pod: String,
    /// `Pulling` or `Pulled`.
    pub reason: String,
    /// The Event's note.
    pub note: String,
}

/// Provision delay observed before, during and after a roll.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Windows {
    /// From the part's start to the roll.
    pub before: Percentiles,
    /// During the roll.
    pub during: Percentiles,
    /// From the roll's end to the part's end.
    pub after: Percentiles,
}

/// One strategy's figures in the report.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct StrategyFigures {
    /// `on_demand` or `prepull`.
    pub strategy: String,
    /// The image before the roll.
    pub image_from: String,
    /// The image rolled to.
    pub image_to: String,
    /// Pods created from the roll's beginning to the part's end.
    pub pods_after_roll_began: u64,
    /// Of those, Pods that waited on a pull (a `Pulling` Event, or a `Pulled` one that is not
    /// "already present on machine").
    pub pods_waited_on_pull: u64,
    /// Provision delay (Pod creation to `tart run`) observed in each window, seconds.
    pub provision_delay_seconds: Windows,
    /// The fewest free VM slots on Macs holding the Pods' current image, from the roll's
    /// beginning to the part's end (`null`: no sample).
    pub min_free_warm_slots: Option<u32>,
    /// The most pulls downloading from the registry at once over the same span.
    pub peak_concurrent_pulls: Option<u32>,
    /// From the roll's beginning to its end, seconds.
    pub roll_duration_seconds: Option<f64>,
    /// The fleet held the new image at the roll's end (false: the bound passed first).
    pub roll_completed: bool,
    /// The pre-pull concurrency cap (`null` on demand).
    pub pull_cap: Option<u32>,
}

/// The `image_roll` key of the report.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct ImageRollReport {
    /// The registry's bandwidth shared by the simulated Macs, MB/s before scaling.
    pub registry_mb_per_s: f64,
    /// Each Mac's own download speed, MB/s before scaling.
    pub mac_mb_per_s: f64,
    /// A roll ends when the fleet holds the new image or after this long, seconds.
    pub roll_bound_seconds: f64,
    /// One entry per strategy, in the order they ran.
    pub strategies: Vec<StrategyFigures>,
}

/// `later − earlier`, bucket by bucket: what was observed between two scrapes.
pub fn since(later: &Histogram, earlier: &Histogram) -> Histogram {
    let mut h = later.clone();
    for (le, n) in &mut h.buckets {
        *n -= earlier.buckets.get(le).copied().unwrap_or(0.0);
    }
    h.sum -= earlier.sum;
    h.count -= earlier.count;
    h
}

/// The Pods that waited on a pull, by their Events.
pub fn waited_on_pull(events: &[PullEvent]) -> BTreeSet<String> {
    events
        .iter()
        .filter(|e| {
            e.reason == "Pulling"
                || (e.reason == "Pulled" && !e.note.contains("already present on machine"))
        })
        .map(|e| e.pod.clone())
        .collect()
}

/// The creation number of a runner Pod (`runner-0007` → 7).
pub fn pod_number(name: &str) -> Option<u64> {
    name.strip_prefix("runner-")?.parse().ok()
}

fn window(from: Option<&Mark>, to: Option<&Mark>) -> Percentiles {
    match (from, to) {
        (Some(a), Some(b)) => Percentiles::of(&since(&b.provision_delay, &a.provision_delay)),
        _ => Percentiles::default(),
    }
}

/// One strategy's figures from its course, the run's ticks and the Pods that waited on a pull.
pub fn figures(
    strategy: Strategy,
    course: &Course,
    ticks: &[Tick],
    waited: &BTreeSet<String>,
) -> StrategyFigures {
    let (from, to) = strategy.images();
    let span = |t: &&Tick| {
        course.roll_began.as_ref().is_some_and(|b| t.at >= b.at)
            && course.ended.as_ref().is_none_or(|e| t.at <= e.at)
    };
    let in_span: Vec<&Tick> = ticks.iter().filter(span).collect();
    let after_roll = |n: u64| n > course.created_at_roll && n <= course.created_at_end;
    let pods_after_roll_began = if course.roll_began.is_some() {
        course.created_at_end.saturating_sub(course.created_at_roll)
    } else {
        0
    };
    StrategyFigures {
        strategy: strategy.as_str().into(),
        image_from: from.into(),
        image_to: to.into(),
        pods_after_roll_began,
        pods_waited_on_pull: waited
            .iter()
            .filter_map(|p| pod_number(p))
            .filter(|n| course.roll_began.is_some() && after_roll(*n))
            .count() as u64,
        provision_delay_seconds: Windows {
            before: window(course.started.as_ref(), course.roll_began.as_ref()),
            during: window(course.roll_began.as_ref(), course.roll_ended.as_ref()),
            after: window(course.roll_ended.as_ref(), course.ended.as_ref()),
        },
        min_free_warm_slots: in_span.iter().map(|t| t.free_warm_slots).min(),
        peak_concurrent_pulls: in_span.iter().map(|t| t.active_pulls).max(),
        roll_duration_seconds: match (&course.roll_began, &course.roll_ended) {
            (Some(b), Some(e)) => Some(e.at - b.at),
            _ => None,
        },
        roll_completed: course.completed,
        pull_cap: course.pull_cap,
    }
}

/// The summary's image-roll section.
pub fn render(o: &mut String, r: &ImageRollReport) {
    use std::fmt::Write as _;
    let s = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2} s"));
    let n = |v: Option<u32>| v.map_or("-".to_string(), |v| v.to_string());
    let _ = writeln!(
        o,
        "image roll: registry {} MB/s shared, {} MB/s per Mac (before scaling); a roll ends when every Mac holds the new image, or after {:.0} s",
        r.registry_mb_per_s, r.mac_mb_per_s, r.roll_bound_seconds
    );
    for f in &r.strategies {
        let title = Strategy::ALL
            .iter()
            .find(|s| s.as_str() == f.strategy)
            .map_or(f.strategy.as_str(), |s| s.title());
        let _ = writeln!(
            o,
            "  {title} ({} -> {}): {}/{} Pods waited on a pull after the roll began; roll {}{}; min free warm slots {}; peak concurrent pulls {}{}",
            f.image_from.rsplit(':').next().unwrap_or_default(),
            f.image_to.rsplit(':').next().unwrap_or_default(),
            f.pods_waited_on_pull,
            f.pods_after_roll_began,
            s(f.roll_duration_seconds),
            if f.roll_completed {
                ""
            } else {
                " (bound passed)"
            },
            n(f.min_free_warm_slots),
            n(f.peak_concurrent_pulls),
            f.pull_cap.map_or(String::new(), |c| format!(" (cap {c})")),
        );
        let w = &f.provision_delay_seconds;
        let _ = writeln!(
            o,
            "    provision delay p50/p99: before {}/{}  during {}/{}  after {}/{}",
            s(w.before.p50),
            s(w.before.p99),
            s(w.during.p50),
            s(w.during.p99),
            s(w.after.p50),
            s(w.after.p99)
        );
    }
}

#[cfg(test)]
mod tests {
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
}
