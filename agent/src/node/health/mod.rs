//! Tart and host health as the node sees it: the node side's own probe of `tart` (found,
//! version supported, `TART_HOME` writable), the host checks ([`crate::hostcheck`]) and host
//! faults reported by the Pod side.
//!
//! [`HostHealth`] is a cheap cloneable handle. The Pod side calls
//! [`HostHealth::record_host_fault`] when a tart operation fails for a host reason (VM limit,
//! auxiliary-storage lock, full disk, tart missing) and [`HostHealth::record_vm_start_ok`] when
//! a VM starts; repeated faults quarantine the Node ([`super::quarantine`]). Every change is
//! published on a watch channel so the status loop writes it promptly.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
};

use tokio::{sync::watch, time::Instant};

use super::quarantine::{Active, Policy, Quarantine};
use crate::hostcheck::Failure;

/// Result of the node side's own tart probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TartProbe {
    /// Not probed yet.
    Unknown,
    /// `tart --version` worked, the version is supported and `TART_HOME` is writable.
    Ok {
        /// The version as printed.
        version: String,
    },
    /// The program could not be started.
    NotFound {
        /// Why.
        message: String,
    },
    /// The version is older than the supported minimum (or unparseable).
    VersionUnsupported {
        /// The version as printed.
        version: String,
        minimum: String,
    },
    /// `tart --version` failed or timed out.
    Failing {
        /// Why.
        message: String,
    },
    /// `TART_HOME` cannot be written.
    HomeNotWritable {
        /// Why.
        message: String,
    },
}

impl TartProbe {
    /// The tart version when known (also for an unsupported one).
    pub(crate) fn version(&self) -> Option<&str> {
        match self {
            TartProbe::Ok { version } | TartProbe::VersionUnsupported { version, .. } => {
                Some(version)
            }
            _ => None,
        }
    }
}

/// A quarantine in force: repeated host faults seen by the Pod side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HostFault {
    /// The latest fault's kind.
    pub kind: tart::ErrorKind,
    /// Faults that started (and extended) the quarantine.
    pub count: usize,
    /// When the quarantine started (a new value means a new quarantine).
    pub since: Instant,
    /// When it ends unless another fault comes.
    pub until: Instant,
}

impl HostFault {
    /// The `TartReady` reason for this fault.
    pub(crate) fn reason(&self) -> &'static str {
        match self.kind {
            tart::ErrorKind::VmLimit => "VMLimitReached",
            tart::ErrorKind::AuxStorageLocked => "AuxiliaryStorageLocked",
            tart::ErrorKind::NoSpace => "DiskFull",
            tart::ErrorKind::Spawn => "TartMissing",
            _ => "TartHostFault",
        }
    }
}

impl From<Active> for HostFault {
    fn from(a: Active) -> Self {
        Self {
            kind: a.kind,
            count: a.count,
            since: a.since,
            until: a.until,
        }
    }
}

/// What the status loop needs: the probe, the quarantine and the failing host checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HealthSnapshot {
    /// Node side probe.
    pub probe: TartProbe,
    /// The quarantine in force, if any.
    pub fault: Option<HostFault>,
    /// Failing host checks ([`crate::hostcheck`]), in check order.
    pub checks: Vec<Failure>,
    /// VM profiles (by handler) this Mac cannot run now, and why
    /// ([`crate::hostcheck::profiles`]).
    pub unavailable_profiles: BTreeMap<String, String>,
    /// The host checks have finished a round since start-up (until then the cordon is left
    /// as it is: a restarted agent does not lift its cordon before it has looked).
    pub checked: bool,
}

impl HealthSnapshot {
    /// Whether tart is usable (probe ok, no quarantine, no failing host check).
    #[cfg(test)]
    pub(crate) fn tart_usable(&self) -> bool {
        matches!(self.probe, TartProbe::Ok { .. }) && self.fault.is_none() && self.checks.is_empty()
    }
}

/// Shared health handle. Clone freely.
#[derive(Clone, Debug)]
pub(crate) struct HostHealth {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    state: Mutex<State>,
    tx: watch::Sender<HealthSnapshot>,
}

#[derive(Debug)]
struct State {
    probe: TartProbe,
    quarantine: Quarantine,
    checks: Vec<Failure>,
    unavailable_profiles: BTreeMap<String, String>,
    checked: bool,
}

impl Default for HostHealth {
    /// [`Policy::default`].
    fn default() -> Self {
        Self::with_policy(Policy::default())
    }
}

impl HostHealth {
    /// `threshold` (≥ 1) host faults within `window` quarantine the Node for the default
    /// cool-down.
    #[cfg(test)]
    pub(crate) fn new(threshold: usize, window: std::time::Duration) -> Self {
        Self::with_policy(Policy {
            faults: threshold,
            window,
            ..Policy::default()
        })
    }

    /// Quarantine by `policy`.
    pub(crate) fn with_policy(policy: Policy) -> Self {
        let (tx, _) = watch::channel(HealthSnapshot {
            probe: TartProbe::Unknown,
            fault: None,
            checks: Vec::new(),
            unavailable_profiles: BTreeMap::new(),
            checked: false,
        });
        Self {
            inner: Arc::new(Inner {
                state: Mutex::new(State {
                    probe: TartProbe::Unknown,
                    quarantine: Quarantine::new(policy),
                    checks: Vec::new(),
                    unavailable_profiles: BTreeMap::new(),
                    checked: false,
                }),
                tx,
            }),
        }
    }

    /// Pod side: a tart operation failed with `kind`. Only host-fault kinds
    /// ([`tart::ErrorKind::is_host_fault`]) count; others are ignored.
    pub(crate) fn record_host_fault(&self, kind: tart::ErrorKind) {
        if !kind.is_host_fault() {
            return;
        }
        let mut st = self.lock();
        st.quarantine.fault(Instant::now(), kind);
        self.publish(&mut st);
    }

    /// Pod side: a VM started; the host evidently works, forget earlier faults.
    pub(crate) fn record_vm_start_ok(&self) {
        let mut st = self.lock();
        st.quarantine.vm_started();
        self.publish(&mut st);
    }

    /// Node side: the latest tart probe.
    pub(crate) fn set_probe(&self, probe: TartProbe) {
        let mut st = self.lock();
        st.probe = probe;
        self.publish(&mut st);
    }

    /// Node side: the host checks failing now, and the VM profiles this Mac cannot run.
    pub(crate) fn set_checks(
        &self,
        checks: Vec<Failure>,
        unavailable_profiles: BTreeMap<String, String>,
    ) {
        let mut st = self.lock();
        st.checks = checks;
        st.unavailable_profiles = unavailable_profiles;
        st.checked = true;
        self.publish(&mut st);
    }

    /// The current snapshot, with an expired quarantine lifted.
    pub(crate) fn snapshot(&self) -> HealthSnapshot {
        let mut st = self.lock();
        self.publish(&mut st);
        self.inner.tx.borrow().clone()
    }

    /// Receiver that changes whenever the snapshot does.
    pub(crate) fn subscribe(&self) -> watch::Receiver<HealthSnapshot> {
        self.inner.tx.subscribe()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn publish(&self, st: &mut State) {
        let snap = HealthSnapshot {
            probe: st.probe.clone(),
            fault: st.quarantine.current(Instant::now()).map(HostFault::from),
            checks: st.checks.clone(),
            unavailable_profiles: st.unavailable_profiles.clone(),
            checked: st.checked,
        };
        self.inner.tx.send_if_modified(|cur| {
            if *cur == snap {
                false
            } else {
                *cur = snap;
                true
            }
        });
    }
}

#[cfg(test)]
mod tests;
