//! Waking a log collector or follower when the files it follows change, instead of polling
//! them: one OS file watch per agent ([`LogWatch`]: inotify on Linux, kqueue on macOS, on the
//! runtime's reactor), shared by every waiter; each waiter ([`Wake`]) registers the files it
//! follows and unregisters them when dropped, with the collector's run or the follower's
//! stream. A waiter still looks at its files every [`pace::FALLBACK`] without a notification,
//! and polls every [`pace::POLL`] when its files cannot be watched or the watch is seen to
//! miss writes (`pace.rs`). What a step does with the files is the caller's.

mod os;
pub(crate) mod pace;
mod registry;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use tokio::sync::Notify;
use tokio::task::AbortHandle;
use tracing::{debug, info, warn};

use pace::{Pace, Periods, Woke};
use registry::{Entry, Os, Registry};

/// The agent's file watch for container logs. Cheap to clone; the watch ends with the last
/// clone and the last [`Wake`].
#[derive(Clone)]
pub(crate) struct LogWatch(Arc<Inner>);

struct Inner {
    periods: Periods,
    /// None: no watch could be made, and every waiter polls.
    hub: Option<Hub>,
}

struct Hub {
    os: Arc<dyn Os>,
    registry: Arc<Mutex<Registry>>,
    /// The task that reads the OS's events.
    pump: Option<AbortHandle>,
}

impl Drop for Hub {
    fn drop(&mut self) {
        if let Some(p) = &self.pump {
            p.abort();
        }
    }
}

impl std::fmt::Debug for LogWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogWatch")
            .field("watching", &self.0.hub.is_some())
            .finish()
    }
}

impl LogWatch {
    /// The OS's watch, read by a task on the current runtime; without one (no instance left:
    /// inotify's per-user limit, no descriptor), a watch whose waiters poll.
    pub(crate) fn start(periods: Periods) -> Self {
        match os::System::new() {
            Ok(sys) => {
                let sys = Arc::new(sys);
                let registry = Arc::new(Mutex::new(Registry::default()));
                let pump = tokio::spawn(pump(sys.clone(), Arc::downgrade(&registry)));
                Self(Arc::new(Inner {
                    periods,
                    hub: Some(Hub {
                        os: sys,
                        registry,
                        pump: Some(pump.abort_handle()),
                    }),
                }))
            }
            Err(error) => {
                warn!(%error, poll_ms = periods.poll.as_millis(), "cannot watch log files; polling them");
                Self::polling(periods)
            }
        }
    }

    /// A watch whose waiters poll.
    pub(crate) fn polling(periods: Periods) -> Self {
        Self(Arc::new(Inner { periods, hub: None }))
    }

    /// A waiter on `files`, each followed in its parent directory. A waiter whose files
    /// cannot be watched (a directory not there yet) polls, and tries again every fallback
    /// period.
    pub(crate) fn wake_on(&self, files: &[PathBuf]) -> Wake {
        let mut w = Wake {
            watch: self.clone(),
            files: files.to_vec(),
            notify: Arc::new(Notify::new()),
            alive: Arc::new(AtomicBool::new(false)),
            pace: Pace::new(self.0.periods, false),
            last: Woke::Changed,
            sub: None,
            retry_at: None,
        };
        w.subscribe();
        w
    }

    /// Directories watched now.
    #[cfg(test)]
    pub(crate) fn watched_dirs(&self) -> usize {
        self.0.hub.as_ref().map_or(0, |h| {
            h.registry
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .dirs()
        })
    }

    /// The OS's watch, which the calling test needs (it fails without one).
    #[cfg(test)]
    pub(crate) fn os_for_tests(periods: Periods) -> Self {
        let w = Self::start(periods);
        assert!(w.0.hub.is_some(), "no OS file watch could be made");
        w
    }

    /// A watch that sees no change by itself: [`LogWatch::fire`] tells its waiters one.
    #[cfg(test)]
    pub(crate) fn manual(periods: Periods) -> Self {
        Self(Arc::new(Inner {
            periods,
            hub: Some(Hub {
                os: Arc::new(Manual),
                registry: Arc::new(Mutex::new(Registry::default())),
                pump: None,
            }),
        }))
    }

    /// Tell every waiter its files changed.
    #[cfg(test)]
    pub(crate) fn fire(&self) {
        if let Some(h) = &self.0.hub {
            h.registry
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .dispatch(&registry::Event::Overflow);
        }
    }
}

/// Read the OS's events and wake their waiters, until the watch is dropped or fails.
async fn pump(sys: Arc<os::System>, registry: Weak<Mutex<Registry>>) {
    loop {
        let events = match sys.events().await {
            Ok(e) => e,
            Err(error) => {
                // Waiters go on at their fallback period, and poll once it finds what the
                // watch did not report.
                warn!(%error, "log file watch failed");
                return;
            }
        };
        let Some(r) = registry.upgrade() else {
            return;
        };
        let mut r = r.lock().unwrap_or_else(PoisonError::into_inner);
        for e in &events {
            r.dispatch(e);
        }
    }
}

/// A waiter's registration; dropping it unregisters.
struct Subscription {
    watch: Arc<Inner>,
    entry: Entry,
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if let Some(h) = &self.watch.hub {
            let mut r = h.registry.lock().unwrap_or_else(PoisonError::into_inner);
            r.remove(&*h.os, &self.entry);
        }
    }
}

/// One collector's or follower's wait for its files to change.
pub(crate) struct Wake {
    watch: LogWatch,
    files: Vec<PathBuf>,
    notify: Arc<Notify>,
    /// Turned false by the registry when a directory of this waiter's is gone.
    alive: Arc<AtomicBool>,
    pace: Pace,
    /// How the last wait ended, until [`Wake::found`] takes it.
    last: Woke,
    sub: Option<Subscription>,
    /// When to try again to watch the files, while they are not watched.
    retry_at: Option<tokio::time::Instant>,
}

impl Wake {
    /// Wait until a file changes, or the period passes. A change since the last wait ends
    /// it at once.
    pub(crate) async fn wait(&mut self) {
        if self.sub.is_some() && !self.alive.load(Ordering::Relaxed) {
            // A directory went away: what is left of the registration goes too.
            self.sub = None;
            self.pace.set_watched(false);
        }
        if self.sub.is_none()
            && self
                .retry_at
                .is_none_or(|t| tokio::time::Instant::now() >= t)
        {
            self.subscribe();
        }
        let period = self.pace.period();
        self.last = tokio::select! {
            biased;
            () = self.notify.notified() => Woke::Changed,
            () = tokio::time::sleep(period) => Woke::Timer,
        };
    }

    /// After the step that followed a wait: whether it found anything new. New data found
    /// only by the period, twice with no notification between, means the watch misses
    /// writes (a share whose writes the host does not report): the waiter polls from then on.
    pub(crate) fn found(&mut self, found: bool) {
        let woke = std::mem::replace(&mut self.last, Woke::Changed);
        if self.pace.after(woke, found) {
            info!(
                poll_ms = self.pace.period().as_millis(),
                "log file notifications missed writes; polling"
            );
        }
    }

    /// Register the files with the watch; on failure, try again a fallback period later.
    fn subscribe(&mut self) {
        let Some(h) = self.watch.0.hub.as_ref() else {
            return;
        };
        let alive = Arc::new(AtomicBool::new(true));
        let added = h
            .registry
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .add(&*h.os, &self.files, &self.notify, &alive);
        match added {
            Ok(entry) => {
                self.alive = alive;
                self.sub = Some(Subscription {
                    watch: self.watch.0.clone(),
                    entry,
                });
                self.retry_at = None;
                self.pace.set_watched(true);
            }
            Err(error) => {
                debug!(%error, "cannot watch the log files yet; polling them");
                let fallback = self.watch.0.periods.fallback;
                self.retry_at = Some(tokio::time::Instant::now() + fallback);
            }
        }
    }

    /// Whether this waiter polls (no watch, or it missed writes).
    #[cfg(test)]
    pub(crate) fn polling(&self) -> bool {
        self.sub.is_none() || !self.alive.load(Ordering::Relaxed) || self.pace.polling()
    }
}

impl std::fmt::Debug for Wake {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wake").field("pace", &self.pace).finish()
    }
}

/// The OS of [`LogWatch::manual`]: every directory can be watched, nothing is reported.
#[cfg(test)]
struct Manual;

#[cfg(test)]
impl Os for Manual {
    fn watch_dir(&self, dir: &std::path::Path) -> std::io::Result<registry::DirKey> {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        dir.hash(&mut h);
        Ok(h.finish() as registry::DirKey)
    }
    fn unwatch_dir(&self, _key: registry::DirKey) {}
    fn follow(&self, _: registry::DirKey, _: &std::path::Path, _: &[std::ffi::OsString]) {}
}

#[cfg(test)]
mod tests;
