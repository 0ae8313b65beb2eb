//! Attempt reporting: every try of every operation is reported to an [`Observer`], so the agent
//! can count attempts, retries and kills without this crate knowing about metrics.

use std::time::Duration;

use crate::{ErrorKind, Op};

/// What one attempt came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptOutcome {
    /// Exit 0.
    Ok,
    /// Failed with this kind (includes `Timeout` and `Stalled`).
    Error(ErrorKind),
}

/// One attempt of one operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attempt {
    /// The subcommand attempted.
    pub op: Op,
    /// 1-based attempt number within this call.
    pub attempt: u32,
    /// Success, or the kind the attempt failed with.
    pub outcome: AttemptOutcome,
    /// Wall time of this attempt.
    pub elapsed: Duration,
    /// Whether the process group was killed (deadline or stall watchdog).
    pub killed: bool,
    /// Whether another attempt follows.
    pub will_retry: bool,
}

/// Receives every attempt. Must be cheap and must not block.
pub trait Observer: Send + Sync + 'static {
    /// Called once per attempt, after it ended.
    fn attempt(&self, attempt: &Attempt);
}

/// Ignores every attempt: the observer of a client built without one.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct NoopObserver;

impl Observer for NoopObserver {
    fn attempt(&self, _attempt: &Attempt) {}
}
