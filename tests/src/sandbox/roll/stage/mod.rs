//! The `image-roll` scenario's course, as a pure state machine: two strategies on the same
//! fleet, one after the other, each with a stretch before its roll, the roll, and a stretch
//! after it. The Pod budget of a run (`--pods`, in sixths) decides when each part starts;
//! what the sandbox observes (Pods created, which Macs hold the next image) decides when a
//! roll ends.
//!
//! Each roll names a new tag (`:v1` → `:v2` on demand, `:v2` → `:v3` with pre-pull) rather
//! than moving one tag to a new digest: CI runner configurations pin a tag per image release,
//! the pre-pull ConfigMap names exactly the string the Pods will use, and with
//! `imagePullPolicy: IfNotPresent` a moved tag that a Mac already holds would never be
//! pulled again (kubelet does not re-resolve a present tag).

use std::time::Duration;

/// How the fleet gets the next image.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Strategy {
    /// The Pods name the new image and each Mac pulls it when its first such Pod arrives.
    OnDemand,
    /// The pre-pull ConfigMap names the new image first; the Pods switch once the fleet holds
    /// it (or a bound passes).
    Prepull,
}

impl Strategy {
    /// Both, in the order a run goes through them.
    pub const ALL: [Strategy; 2] = [Strategy::OnDemand, Strategy::Prepull];

    /// Stable key in the report.
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::OnDemand => "on_demand",
            Strategy::Prepull => "prepull",
        }
    }

    /// Heading in the printed summary.
    pub fn title(self) -> &'static str {
        match self {
            Strategy::OnDemand => "pull on demand",
            Strategy::Prepull => "pre-pull + pacing",
        }
    }

    /// The image the fleet runs before this strategy's roll, and the one it rolls to.
    pub fn images(self) -> (&'static str, &'static str) {
        match self {
            Strategy::OnDemand => (IMAGES[0], IMAGES[1]),
            Strategy::Prepull => (IMAGES[1], IMAGES[2]),
        }
    }

    /// Index into per-strategy arrays.
    pub fn index(self) -> usize {
        self as usize
    }
}

/// The runner image's three releases.
pub const IMAGES: [&str; 3] = [
    "ghcr.io/cirruslabs/macos-tahoe-base:v1",
    "ghcr.io/cirruslabs/macos-tahoe-base:v2",
    "ghcr.io/cirruslabs/macos-tahoe-base:v3",
];

/// Where a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Pods run the strategy's old image.
    Before(Strategy),
    /// The roll is under way.
    Rolling(Strategy),
    /// The roll has ended; Pods run the new image.
    After(Strategy),
}

/// When each part starts, in Pods created: a sixth of `--pods` before the on-demand roll,
/// on-demand until half, a sixth before the pre-pull roll, and at most five sixths created
/// before the pre-pull roll has ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    unit: u64,
    total: u64,
}

impl Budget {
    /// The budget of a run of `total` Pods (at least 6).
    pub fn new(total: u64) -> Budget {
        Budget {
            unit: (total / 6).max(1),
            total,
        }
    }

    /// Pods the workload may have created by now in `stage`: it waits at the cap until the
    /// stage moves on, so every part gets its Pods whatever the rolls' length.
    pub fn creation_cap(&self, stage: Stage) -> u64 {
        let u = self.unit;
        match stage {
            Stage::Before(Strategy::OnDemand) => u,
            Stage::Rolling(Strategy::OnDemand) | Stage::After(Strategy::OnDemand) => 3 * u,
            Stage::Before(Strategy::Prepull) => 4 * u,
            Stage::Rolling(Strategy::Prepull) => 5 * u,
            Stage::After(Strategy::Prepull) => self.total,
        }
    }
}

/// What one tick of the sandbox observed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    /// Pods created so far.
    pub created: u64,
    /// Every Mac holds the image the current roll rolls to.
    pub fleet_holds_next: bool,
    /// Since the current roll began (zero outside a roll).
    pub rolling_for: Duration,
}

/// A transition, with what the sandbox does at it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// On demand: the Pods switch to the new image. Pre-pull: the ConfigMap names it.
    BeginRoll(Strategy),
    /// The fleet holds the new image (`completed`), or the bound passed first. Pre-pull: the
    /// Pods switch now.
    EndRoll { strategy: Strategy, completed: bool },
    /// The on-demand part is over; the pre-pull part starts.
    EndOnDemand,
}

/// The transition `seen` calls for in `stage`, if any; `bound` limits a roll.
pub fn next(stage: Stage, budget: &Budget, seen: &Seen, bound: Duration) -> Option<Step> {
    match stage {
        Stage::Before(s) if seen.created >= budget.creation_cap(stage) => Some(Step::BeginRoll(s)),
        Stage::Rolling(strategy) if seen.fleet_holds_next => Some(Step::EndRoll {
            strategy,
            completed: true,
        }),
        Stage::Rolling(strategy) if seen.rolling_for >= bound => Some(Step::EndRoll {
            strategy,
            completed: false,
        }),
        Stage::After(Strategy::OnDemand) if seen.created >= budget.creation_cap(stage) => {
            Some(Step::EndOnDemand)
        }
        _ => None,
    }
}

/// The stage after `step`.
pub fn apply(step: Step) -> Stage {
    match step {
        Step::BeginRoll(s) => Stage::Rolling(s),
        Step::EndRoll { strategy, .. } => Stage::After(strategy),
        Step::EndOnDemand => Stage::Before(Strategy::Prepull),
    }
}

/// The image of the Pods created in `stage`.
pub fn pod_image(stage: Stage) -> &'static str {
    match stage {
        Stage::Before(s) => s.images().0,
        Stage::Rolling(Strategy::OnDemand) => Strategy::OnDemand.images().1,
        Stage::Rolling(Strategy::Prepull) => Strategy::Prepull.images().0,
        Stage::After(s) => s.images().1,
    }
}

/// The strategy a stage belongs to.
pub fn strategy(stage: Stage) -> Strategy {
    match stage {
        Stage::Before(s) | Stage::Rolling(s) | Stage::After(s) => s,
    }
}

#[cfg(test)]
mod tests;
