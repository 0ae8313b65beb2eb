//! Tart and host health as the node sees it: the node side's own probe of `tart` (found,
//! version supported, `TART_HOME` writable) and host faults reported by the Pod side.
//!
//! [`HostHealth`] is a cheap cloneable handle. The Pod side calls
//! [`HostHealth::record_host_fault`] when a tart operation fails for a host reason (VM limit,
//! auxiliary-storage lock, full disk, tart missing) and [`HostHealth::record_vm_start_ok`] when
//! a VM starts. `threshold` faults within `window` make the node's `TartReady` condition False
//! with a specific reason until a VM starts again or the faults age out. Every change is
//! published on a watch channel so the status loop writes it promptly.

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex},
    time::Duration,
};

use tokio::{sync::watch, time::Instant};

/// Result of the node side's own tart probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TartProbe {
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
        /// The minimum.
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
    pub fn version(&self) -> Option<&str> {
        match self {
            TartProbe::Ok { version } | TartProbe::VersionUnsupported { version, .. } => {
                Some(version)
            }
            _ => None,
        }
    }
}

/// Repeated host faults seen by the Pod side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostFault {
    /// The latest fault's kind.
    pub kind: tart::ErrorKind,
    /// Faults within the window.
    pub count: usize,
}

impl HostFault {
    /// The `TartReady` reason for this fault.
    pub fn reason(&self) -> &'static str {
        match self.kind {
            tart::ErrorKind::VmLimit => "VMLimitReached",
            tart::ErrorKind::AuxStorageLocked => "AuxiliaryStorageLocked",
            tart::ErrorKind::NoSpace => "DiskFull",
            tart::ErrorKind::Spawn => "TartMissing",
            _ => "TartHostFault",
        }
    }
}

/// What the status loop needs: the probe and the current fault, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealthSnapshot {
    /// Node side probe.
    pub probe: TartProbe,
    /// Repeated host faults, if over the threshold.
    pub fault: Option<HostFault>,
}

impl HealthSnapshot {
    /// Whether tart is usable (probe ok, no repeated host fault).
    #[cfg(test)]
    pub fn tart_usable(&self) -> bool {
        matches!(self.probe, TartProbe::Ok { .. }) && self.fault.is_none()
    }
}

/// Shared health handle. Clone freely.
#[derive(Clone, Debug)]
pub struct HostHealth {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    threshold: usize,
    window: Duration,
    state: Mutex<State>,
    tx: watch::Sender<HealthSnapshot>,
}

#[derive(Debug)]
struct State {
    probe: TartProbe,
    faults: VecDeque<(Instant, tart::ErrorKind)>,
}

impl Default for HostHealth {
    /// Two host faults within ten minutes mark tart not ready.
    fn default() -> Self {
        Self::new(2, Duration::from_secs(600))
    }
}

impl HostHealth {
    /// `threshold` (≥ 1) host faults within `window` make tart not ready.
    pub fn new(threshold: usize, window: Duration) -> Self {
        let (tx, _) = watch::channel(HealthSnapshot {
            probe: TartProbe::Unknown,
            fault: None,
        });
        Self {
            inner: Arc::new(Inner {
                threshold: threshold.max(1),
                window,
                state: Mutex::new(State {
                    probe: TartProbe::Unknown,
                    faults: VecDeque::new(),
                }),
                tx,
            }),
        }
    }

    /// Pod side: a tart operation failed with `kind`. Only host-fault kinds
    /// ([`tart::ErrorKind::is_host_fault`]) count; others are ignored.
    pub fn record_host_fault(&self, kind: tart::ErrorKind) {
        if !kind.is_host_fault() {
            return;
        }
        let mut st = self.lock();
        st.faults.push_back((Instant::now(), kind));
        self.publish(&mut st);
    }

    /// Pod side: a VM started; the host evidently works, forget earlier faults.
    pub fn record_vm_start_ok(&self) {
        let mut st = self.lock();
        st.faults.clear();
        self.publish(&mut st);
    }

    /// Node side: the latest tart probe.
    pub fn set_probe(&self, probe: TartProbe) {
        let mut st = self.lock();
        st.probe = probe;
        self.publish(&mut st);
    }

    /// The current snapshot, with faults older than the window dropped.
    pub fn snapshot(&self) -> HealthSnapshot {
        let mut st = self.lock();
        self.publish(&mut st);
        self.inner.tx.borrow().clone()
    }

    /// Receiver that changes whenever the snapshot does.
    pub fn subscribe(&self) -> watch::Receiver<HealthSnapshot> {
        self.inner.tx.subscribe()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn publish(&self, st: &mut State) {
        let now = Instant::now();
        while st
            .faults
            .front()
            .is_some_and(|(t, _)| now.duration_since(*t) > self.inner.window)
        {
            st.faults.pop_front();
        }
        let fault = (st.faults.len() >= self.inner.threshold).then(|| HostFault {
            kind: st
                .faults
                .back()
                .map(|f| f.1)
                .unwrap_or(tart::ErrorKind::Other),
            count: st.faults.len(),
        });
        let snap = HealthSnapshot {
            probe: st.probe.clone(),
            fault,
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
mod tests {
    use super::*;
    use tart::ErrorKind;

    fn ok_probe() -> TartProbe {
        TartProbe::Ok {
            version: "2.35.0".into(),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn repeated_vm_limit_faults_make_tart_unusable_until_a_vm_starts() {
        let h = HostHealth::new(2, Duration::from_secs(600));
        h.set_probe(ok_probe());
        let mut rx = h.subscribe();
        rx.borrow_and_update();
        h.record_host_fault(ErrorKind::VmLimit);
        assert!(h.snapshot().tart_usable(), "one fault is not enough");
        h.record_host_fault(ErrorKind::VmLimit);
        assert!(rx.has_changed().unwrap(), "status loop is woken");
        let snap = h.snapshot();
        assert_eq!(
            snap.fault.as_ref().map(HostFault::reason),
            Some("VMLimitReached")
        );
        assert!(!snap.tart_usable());
        h.record_vm_start_ok();
        assert!(h.snapshot().tart_usable());
    }

    #[tokio::test(start_paused = true)]
    async fn faults_age_out_of_the_window() {
        let h = HostHealth::new(2, Duration::from_secs(60));
        h.set_probe(ok_probe());
        h.record_host_fault(ErrorKind::AuxStorageLocked);
        h.record_host_fault(ErrorKind::AuxStorageLocked);
        assert_eq!(
            h.snapshot().fault.map(|f| f.reason()),
            Some("AuxiliaryStorageLocked")
        );
        tokio::time::advance(Duration::from_secs(61)).await;
        assert_eq!(h.snapshot().fault, None);
    }

    #[tokio::test(start_paused = true)]
    async fn workload_faults_are_ignored() {
        let h = HostHealth::new(1, Duration::from_secs(60));
        h.set_probe(ok_probe());
        h.record_host_fault(ErrorKind::NotFound);
        h.record_host_fault(ErrorKind::Auth);
        assert!(h.snapshot().tart_usable());
        h.record_host_fault(ErrorKind::NoSpace);
        assert_eq!(h.snapshot().fault.map(|f| f.reason()), Some("DiskFull"));
    }
}
