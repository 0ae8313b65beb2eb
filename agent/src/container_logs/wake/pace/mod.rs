//! When a waiting collector or follower looks at its files again without being told they
//! changed: rarely while its file watch works ([`FALLBACK`]), often ([`POLL`]) when there is
//! no watch or the watch has missed writes. Pure: the caller reports how each wait ended and
//! whether the step after it found anything new.

use std::time::Duration;

/// The look without a change notification while the watch works: it bounds how late a
/// change the watch missed is seen (a write on a share the host's watch does not see, a
/// notification queue that overflowed), and drives the time-based work of a step (an
/// unfinished line's flush, the checkpoint).
pub(crate) const FALLBACK: Duration = Duration::from_millis(250);

/// The period without a watch, or once the watch has missed writes.
pub(crate) const POLL: Duration = Duration::from_millis(25);

/// This many fallback looks that found new data, with no notification between them, and the
/// watch is taken to miss writes. One could be a notification still on its way when the
/// fallback fired; it then arrives right after and resets the count.
pub(crate) const MISSES: u8 = 2;

/// How a wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Woke {
    /// A change notification for one of the files.
    Changed,
    /// The period passed without one.
    Timer,
}

/// The periods in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Periods {
    pub fallback: Duration,
    pub poll: Duration,
}

impl Default for Periods {
    fn default() -> Self {
        Self {
            fallback: FALLBACK,
            poll: POLL,
        }
    }
}

#[cfg(test)]
impl Periods {
    /// Periods far longer than any test: a test whose waiter needs a period hangs.
    pub(crate) fn never() -> Self {
        Self {
            fallback: Duration::from_secs(3600),
            poll: Duration::from_secs(3600),
        }
    }
}

/// One waiter's pace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pace {
    periods: Periods,
    /// Its files are watched.
    watched: bool,
    /// Fallback looks that found new data since the last notification.
    misses: u8,
    /// The watch missed writes: poll for the rest of its life.
    missed: bool,
}

impl Pace {
    /// The pace of a waiter whose files are `watched` (or not).
    pub(crate) fn new(periods: Periods, watched: bool) -> Self {
        Self {
            periods,
            watched,
            misses: 0,
            missed: false,
        }
    }

    /// How long the next wait lasts without a notification.
    pub(crate) fn period(&self) -> Duration {
        if self.watched && !self.missed {
            self.periods.fallback
        } else {
            self.periods.poll
        }
    }

    /// Whether the watch was given up for polling.
    #[cfg(test)]
    pub(crate) fn polling(&self) -> bool {
        !self.watched || self.missed
    }

    /// Whether its files are watched now (a directory was made later, or went away).
    pub(crate) fn set_watched(&mut self, watched: bool) {
        self.watched = watched;
    }

    /// After a wait that ended as `woke` and the step after it: `found` whether the step
    /// read anything new. Returns `true` when this made the waiter give up on its watch.
    pub(crate) fn after(&mut self, woke: Woke, found: bool) -> bool {
        if !self.watched || self.missed {
            return false;
        }
        match (woke, found) {
            (Woke::Changed, _) => self.misses = 0,
            (Woke::Timer, true) => self.misses = self.misses.saturating_add(1),
            (Woke::Timer, false) => {}
        }
        self.missed = self.misses >= MISSES;
        self.missed
    }
}

#[cfg(test)]
mod tests;
