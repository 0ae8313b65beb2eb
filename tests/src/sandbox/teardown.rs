//! The end of a sandbox run: the agents delete the Pods and their VMs, the agents stop, and
//! nothing of the run may be left. A second interrupt cuts it short (see [`super::interrupt`]).

use std::time::Duration;

use kube::Client;

use super::{Opts, Scenario, agents::SimMac, interrupt::Interrupts, invariants, report::Invariant};

/// Tear down and return the invariants checked on the way.
pub(super) async fn run(
    opts: &Opts,
    admin: &Client,
    macs: &mut [SimMac],
    interrupts: &Interrupts,
    interrupted: bool,
) -> Vec<Invariant> {
    let mut out = vec![];
    // Teardown: delete the Pods through the agents, then check nothing is left. A second
    // interrupt skips to killing what is left.
    let skip = interrupts.count() + 1;
    if opts.scenario != Scenario::Idle || interrupted {
        let checks = tokio::select! {
            c = invariants::teardown(admin, macs, Duration::from_secs(120)) => c,
            () = interrupts.reached(skip) => vec![invariants::check(
                "teardown_completed",
                false,
                "interrupted again: VMs and agents were killed, not torn down".into(),
            )],
        };
        out.extend(checks);
    }
    let grace = if interrupts.count() >= skip {
        Duration::ZERO
    } else {
        Duration::from_secs(10)
    };
    let mut agents_exited = 0;
    for m in macs.iter_mut() {
        agents_exited += usize::from(m.stop(grace).await);
    }
    out.push(invariants::check(
        "agents_stopped_cleanly",
        agents_exited == macs.len(),
        format!(
            "{} of {} agents did not exit within {grace:?} of SIGTERM",
            macs.len() - agents_exited,
            macs.len()
        ),
    ));
    let (leftovers, strays) = macs
        .iter()
        .map(SimMac::kill_leftovers)
        .fold((0, 0), |(a, b), (v, o)| (a + v, b + o));
    out.push(invariants::check(
        "no_process_left",
        leftovers + strays == 0,
        format!(
            "{leftovers} tart run processes and {strays} other fake-tart processes were still \
             alive after the agents stopped"
        ),
    ));
    out
}
