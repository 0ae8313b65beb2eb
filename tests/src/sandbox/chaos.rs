//! The `chaos` scenario's fault injector: at random intervals, on a random simulated Mac, one
//! of: a hung clone, a stalled pull, a VM-limit hit, an auxiliary-storage lock, a window in
//! which guests crash (exit 1), or the agent SIGKILLed and restarted. Faults are fake-tart knob
//! rules consumed once, so each fires exactly once wherever the next matching call lands.

use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng, rngs::StdRng};

use super::{Opts, agents::SimMac, metrics, progress::Progress};
use crate::fake::{Rule, VmKnob};

/// Agent flags that keep injected hangs short: a hung clone is killed after 5 s, a stalled
/// pull after 3 s without progress.
pub fn agent_args() -> Vec<String> {
    ["--tart-deadline", "clone=5s", "--pull-stall-window", "3s"]
        .map(String::from)
        .to_vec()
}

/// One kind of injected fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The next `tart clone` hangs (killed at its deadline, retried).
    HangClone,
    /// The next `tart pull` stalls at 30 % (killed by the watchdog, retried).
    StallPull,
    /// The next `tart run` hits the two-VM limit (Pod stays Pending, retried).
    VmLimit,
    /// The next `tart run` fails to lock auxiliary storage (host fault, retried).
    AuxStorageLocked,
    /// Guests started in the next few seconds crash with exit 1 (Pods end Failed).
    CrashWindow,
    /// The agent is SIGKILLed and started again (VMs must be adopted, not restarted).
    AgentRestart,
}

const FAULTS: [Fault; 6] = [
    Fault::HangClone,
    Fault::StallPull,
    Fault::VmLimit,
    Fault::AuxStorageLocked,
    Fault::CrashWindow,
    Fault::AgentRestart,
];

/// The injector's state.
pub struct Chaos {
    rng: StdRng,
    next: Instant,
    crash_until: Vec<(usize, Instant)>,
    earlier: Vec<Vec<metrics::Sample>>,
    /// Faults injected, by kind.
    pub injected: Vec<Fault>,
}

impl Chaos {
    /// A seeded injector; the first fault comes a few seconds after `now`.
    pub fn new(seed: u64, now: Instant) -> Self {
        Self {
            rng: StdRng::seed_from_u64(seed),
            next: now + Duration::from_secs(3),
            crash_until: Vec::new(),
            earlier: Vec::new(),
            injected: Vec::new(),
        }
    }

    /// Ends crash windows that are over, and injects a fault when one is due.
    pub async fn maybe_inject(
        &mut self,
        opts: &Opts,
        macs: &mut [SimMac],
        progress: &mut Progress,
    ) -> anyhow::Result<()> {
        let now = Instant::now();
        let (over, open): (Vec<_>, Vec<_>) = self
            .crash_until
            .drain(..)
            .partition(|(_, until)| *until <= now);
        self.crash_until = open;
        for (i, _) in over {
            let mut k = super::mac_knobs(opts);
            k.rules = std::mem::take(&mut macs[i].knobs.rules);
            macs[i].knobs = k;
            macs[i].write_knobs()?;
        }
        if now < self.next || macs.is_empty() {
            return Ok(());
        }
        self.next = now + Duration::from_millis(self.rng.random_range(1500..4000));
        let i = self.rng.random_range(0..macs.len());
        let fault = FAULTS[self.rng.random_range(0..FAULTS.len())];
        let m = &mut macs[i];
        match fault {
            Fault::HangClone => m.knobs.rules.push(Rule::hang("clone").times(1)),
            Fault::StallPull => m.knobs.rules.push(Rule::stall("pull", 30).times(1)),
            Fault::VmLimit => m.knobs.rules.push(Rule::vm_limit().times(1)),
            Fault::AuxStorageLocked => m.knobs.rules.push(Rule::aux_storage_locked().times(1)),
            Fault::CrashWindow => {
                m.knobs.vms.insert(
                    "*".into(),
                    VmKnob::default().exits_after(opts.job_ms / 4, 1),
                );
                self.crash_until.push((i, now + Duration::from_secs(3)));
            }
            Fault::AgentRestart => {
                if let Ok(t) = m.agent.metrics().await {
                    self.earlier.push(metrics::parse(&t));
                }
                m.kill_and_restart().await?;
            }
        }
        if fault != Fault::AgentRestart {
            m.write_knobs()?;
        }
        progress.line(&format!("chaos: {fault:?} on {}", m.node));
        self.injected.push(fault);
        Ok(())
    }

    /// Scrapes of agent incarnations that were killed (their counts are part of the run).
    pub fn into_earlier_scrapes(self) -> Vec<Vec<metrics::Sample>> {
        self.earlier
    }
}
