//! The fleet scenario's course, pure: how many Pods have arrived by now at a steady rate, and
//! where the image roll stands — the pre-pull ConfigMap is written once a third of the Pods
//! were created, the Pods switch to the new image once every Mac holds it, and a roll that
//! outlasts its bound ends without them switching. The last sixth of the Pods wait for the
//! roll to end, so that some always run the new image.

use std::time::Duration;

/// Pods due by `elapsed` at `rate` per second, the first at once; never past `total`.
pub fn due(rate: f64, elapsed: Duration, total: u64) -> u64 {
    let n = (rate.max(0.0) * elapsed.as_secs_f64()).floor() as u64;
    n.saturating_add(1).min(total)
}

/// Pods created before the roll begins: a third of the run (at least one).
pub fn roll_at(total: u64) -> u64 {
    (total / 3).max(1)
}

/// Pods that may be created before the roll has ended: all but the last sixth (at least one
/// held back).
pub fn before_settled(total: u64) -> u64 {
    total.saturating_sub((total / 6).max(1))
}

/// Where the roll stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Pods run the old image; the roll has not begun.
    Before,
    /// The ConfigMap names the new image; Pods still run the old one.
    Rolling,
    /// Every Mac held the new image; Pods run it.
    Rolled,
    /// The bound passed first; Pods keep the old image.
    GaveUp,
}

/// What the sandbox has seen this tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    /// Pods created so far.
    pub created: u64,
    /// Every Mac holds the new image.
    pub fleet_holds: bool,
    /// Since the ConfigMap was written (zero before).
    pub rolling_for: Duration,
    /// Since the last Mac came to hold the new image, or since the ConfigMap was written if
    /// none has yet (zero before).
    pub idle_for: Duration,
}

/// How long a roll may last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bound {
    /// The roll's length at the nominal pull speed, with margin.
    pub roll: Duration,
    /// Past `roll`, how long the roll may go without another Mac holding the new image: the
    /// simulated pulls slow down with the machine's CPU, and a roll that keeps finishing
    /// pulls is slow, not stuck.
    pub stall: Duration,
}

/// The phase after this tick: a roll gives up once it outlasted its bound and then went a
/// `stall` without progress.
pub fn next(phase: Phase, seen: &Seen, roll_at: u64, bound: Bound) -> Phase {
    match phase {
        Phase::Before if seen.created >= roll_at => Phase::Rolling,
        Phase::Rolling if seen.fleet_holds => Phase::Rolled,
        Phase::Rolling if seen.rolling_for > bound.roll && seen.idle_for > bound.stall => {
            Phase::GaveUp
        }
        p => p,
    }
}

impl Phase {
    /// The roll is over, however it ended.
    pub fn settled(self) -> bool {
        matches!(self, Phase::Rolled | Phase::GaveUp)
    }
}

#[cfg(test)]
mod tests;
