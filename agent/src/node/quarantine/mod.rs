//! PURE: the quarantine decision. `faults` host-caused VM start failures within `window`
//! quarantine the Node for `cooldown`: it takes no new Pods (the gate module), while the VMs
//! already running are left alone. A further host fault while quarantined extends it to
//! `cooldown` from that fault (the host still fails); a VM that starts lifts it (the host
//! evidently works). Time is passed in, so the decision needs no clock.

use std::{collections::VecDeque, time::Duration};

use tokio::time::Instant;

/// When to quarantine and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Policy {
    /// Host faults (≥ 1) within `window` that start a quarantine.
    pub faults: usize,
    /// The window the faults are counted in.
    pub window: Duration,
    /// How long a quarantine lasts after its last fault.
    pub cooldown: Duration,
}

impl Default for Policy {
    /// Three host faults within ten minutes quarantine the Node for fifteen.
    fn default() -> Self {
        Self {
            faults: 3,
            window: Duration::from_secs(600),
            cooldown: Duration::from_secs(900),
        }
    }
}

/// A quarantine in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Active {
    /// The latest fault's kind.
    pub kind: tart::ErrorKind,
    /// Faults that started it (plus any while it lasted).
    pub count: usize,
    /// When it started (a new value means a new quarantine).
    pub since: Instant,
    /// When it ends unless another fault comes.
    pub until: Instant,
}

/// Fault history and the quarantine, if any.
#[derive(Debug, Clone)]
pub(crate) struct Quarantine {
    policy: Policy,
    faults: VecDeque<Instant>,
    active: Option<Active>,
}

impl Quarantine {
    /// No faults, not quarantined.
    pub(crate) fn new(policy: Policy) -> Self {
        Self {
            policy: Policy {
                faults: policy.faults.max(1),
                ..policy
            },
            faults: VecDeque::new(),
            active: None,
        }
    }

    /// A host-caused start failure of `kind` at `now`.
    pub(crate) fn fault(&mut self, now: Instant, kind: tart::ErrorKind) {
        self.expire(now);
        if let Some(a) = &mut self.active {
            a.kind = kind;
            a.count += 1;
            a.until = now + self.policy.cooldown;
            return;
        }
        self.faults.push_back(now);
        if self.faults.len() >= self.policy.faults {
            self.active = Some(Active {
                kind,
                count: self.faults.len(),
                since: now,
                until: now + self.policy.cooldown,
            });
            // The faults that started it are spent: the next quarantine needs new ones.
            self.faults.clear();
        }
    }

    /// A VM started: forget the faults and lift any quarantine.
    pub(crate) fn vm_started(&mut self) {
        self.faults.clear();
        self.active = None;
    }

    /// The quarantine in force at `now`, if any.
    pub(crate) fn current(&mut self, now: Instant) -> Option<Active> {
        self.expire(now);
        self.active
    }

    fn expire(&mut self, now: Instant) {
        if self.active.is_some_and(|a| now >= a.until) {
            self.active = None;
        }
        while self
            .faults
            .front()
            .is_some_and(|t| now.duration_since(*t) > self.policy.window)
        {
            self.faults.pop_front();
        }
    }
}

#[cfg(test)]
mod tests;
