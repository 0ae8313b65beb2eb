//! The `image-roll` report's per-strategy figures, computed from what the run recorded: its
//! course (when each part began and ended, with the agents' provision-delay histograms summed
//! at each of those moments), the per-tick fleet samples and the Pods' pull Events. Pure.

use std::collections::BTreeSet;

use serde::Serialize;

use super::stage::Strategy;
use crate::sandbox::{metrics::Histogram, report::Percentiles};

/// One workload tick's look at the fleet.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Tick {
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
pub(super) struct Course {
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
pub(super) struct Mark {
    /// Seconds since the workload started.
    pub at: f64,
    /// `tart_kubelet_pod_provision_delay_seconds`, summed over agents, then.
    pub provision_delay: Histogram,
}

/// A Pod's pull Event (`Pulling`, `Pulled`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct PullEvent {
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
pub(super) fn since(later: &Histogram, earlier: &Histogram) -> Histogram {
    let mut h = later.clone();
    for (le, n) in &mut h.buckets {
        *n -= earlier.buckets.get(le).copied().unwrap_or(0.0);
    }
    h.sum -= earlier.sum;
    h.count -= earlier.count;
    h
}

/// The Pods that waited on a pull, by their Events.
pub(super) fn waited_on_pull(events: &[PullEvent]) -> BTreeSet<String> {
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
pub(super) fn pod_number(name: &str) -> Option<u64> {
    name.strip_prefix("runner-")?.parse().ok()
}

fn window(from: Option<&Mark>, to: Option<&Mark>) -> Percentiles {
    match (from, to) {
        (Some(a), Some(b)) => Percentiles::of(&since(&b.provision_delay, &a.provision_delay)),
        _ => Percentiles::default(),
    }
}

/// One strategy's figures from its course, the run's ticks and the Pods that waited on a pull.
pub(super) fn figures(
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
mod tests;
