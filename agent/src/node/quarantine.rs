//! PURE: the quarantine decision. `faults` host-caused VM start failures within `window`
//! quarantine the Node for `cooldown`: it takes no new Pods (the gate module), while the VMs
//! already running are left alone. A further host fault while quarantined extends it to
//! `cooldown` from that fault (the host still fails); a VM that starts lifts it (the host
//! evidently works). Time is passed in, so the decision needs no clock.

use std::{collections::VecDeque, time::Duration};

use tokio::time::Instant;

/// When to quarantine and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
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
pub struct Active {
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
pub struct Quarantine {
    policy: Policy,
    faults: VecDeque<Instant>,
    active: Option<Active>,
}

impl Quarantine {
    /// No faults, not quarantined.
    pub fn new(policy: Policy) -> Self {
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
    pub fn fault(&mut self, now: Instant, kind: tart::ErrorKind) {
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
    pub fn vm_started(&mut self) {
        self.faults.clear();
        self.active = None;
    }

    /// The quarantine in force at `now`, if any.
    pub fn current(&mut self, now: Instant) -> Option<Active> {
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
mod tests {
    use super::*;
    use tart::ErrorKind::{AuxStorageLocked, VmLimit};

    const MIN: Duration = Duration::from_secs(60);

    fn q() -> Quarantine {
        Quarantine::new(Policy {
            faults: 3,
            window: 10 * MIN,
            cooldown: 15 * MIN,
        })
    }

    #[test]
    fn three_faults_within_the_window_quarantine_for_the_cooldown() {
        let t0 = Instant::now();
        let mut q = q();
        q.fault(t0, VmLimit);
        q.fault(t0 + MIN, VmLimit);
        assert_eq!(q.current(t0 + MIN), None, "two faults are not enough");
        q.fault(t0 + 2 * MIN, AuxStorageLocked);
        let a = q.current(t0 + 2 * MIN).expect("quarantined");
        assert_eq!(
            (a.kind, a.count, a.since),
            (AuxStorageLocked, 3, t0 + 2 * MIN)
        );
        assert!(q.current(t0 + 16 * MIN).is_some(), "still cooling down");
        assert_eq!(q.current(t0 + 17 * MIN), None, "lifted after the cool-down");
        q.fault(t0 + 18 * MIN, VmLimit);
        assert_eq!(
            q.current(t0 + 18 * MIN),
            None,
            "the spent faults do not count again"
        );
    }

    #[test]
    fn faults_spread_wider_than_the_window_never_quarantine() {
        let t0 = Instant::now();
        let mut q = q();
        for i in 0..6 {
            q.fault(t0 + i * 6 * MIN, VmLimit);
            assert_eq!(q.current(t0 + i * 6 * MIN), None, "fault {i}");
        }
    }

    #[test]
    fn a_fault_while_quarantined_extends_it_and_a_started_vm_lifts_it() {
        let t0 = Instant::now();
        let mut q = q();
        for i in 0..3 {
            q.fault(t0 + i * MIN, VmLimit);
        }
        q.fault(t0 + 10 * MIN, VmLimit);
        let a = q.current(t0 + 20 * MIN).expect("extended");
        assert_eq!(
            (a.count, a.since, a.until),
            (4, t0 + 2 * MIN, t0 + 25 * MIN)
        );
        q.vm_started();
        assert_eq!(q.current(t0 + 20 * MIN), None);
    }

    #[test]
    fn a_threshold_of_zero_means_one() {
        let t0 = Instant::now();
        let mut q = Quarantine::new(Policy {
            faults: 0,
            ..Policy::default()
        });
        q.fault(t0, VmLimit);
        assert!(q.current(t0).is_some());
    }
}
