//! inotify: one watch per directory, on the runtime's reactor (no thread of its own). A
//! directory's watch reports writes to its files by name, and changes to its entries.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io;
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::path::Path;
use std::sync::{Mutex, PoisonError};

use nix::sys::inotify::{AddWatchFlags as F, InitFlags, Inotify, InotifyEvent, WatchDescriptor};
use tokio::io::{Interest, unix::AsyncFd};

use super::super::registry::{DirKey, Event, Os};

/// The inotify instance's descriptor, for the reactor.
struct Fd(Inotify);

impl AsRawFd for Fd {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_fd().as_raw_fd()
    }
}

/// One inotify instance.
pub(crate) struct System {
    fd: AsyncFd<Fd>,
    /// The watch descriptors by key, to remove them.
    wds: Mutex<HashMap<DirKey, WatchDescriptor>>,
}

impl System {
    /// A new instance, registered with the runtime's reactor.
    ///
    /// # Errors
    /// The per-user limit of instances is reached, or there is no runtime.
    pub(crate) fn new() -> io::Result<Self> {
        let ino = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC)?;
        Ok(Self {
            fd: register(Fd(ino))?,
            wds: Mutex::new(HashMap::new()),
        })
    }

    /// The next events.
    ///
    /// # Errors
    /// Reading the instance failed.
    pub(crate) async fn events(&self) -> io::Result<Vec<Event>> {
        loop {
            let mut guard = self.fd.readable().await?;
            match guard.try_io(|fd| fd.get_ref().0.read_events().map_err(io::Error::from)) {
                Ok(read) => {
                    let events: Vec<Event> = read?.into_iter().filter_map(convert).collect();
                    let mut wds = self.wds.lock().unwrap_or_else(PoisonError::into_inner);
                    for e in &events {
                        if let Event::Gone(key) = e {
                            wds.remove(key);
                        }
                    }
                    return Ok(events);
                }
                Err(_would_block) => {}
            }
        }
    }
}

/// `fd` on the runtime's reactor, for reading.
#[allow(unsafe_code)]
fn register(fd: Fd) -> io::Result<AsyncFd<Fd>> {
    // SAFETY: `Fd` owns its descriptor (the `OwnedFd` inside nix's `Inotify`), which stays
    // open and the same for as long as the `AsyncFd` that owns the `Fd` lives.
    unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }.map_err(|e| e.into_parts().1)
}

/// What a directory's watch reports.
fn mask() -> F {
    F::IN_MODIFY
        | F::IN_CREATE
        | F::IN_DELETE
        | F::IN_MOVED_FROM
        | F::IN_MOVED_TO
        | F::IN_DELETE_SELF
        | F::IN_MOVE_SELF
        | F::IN_ONLYDIR
}

fn convert(e: InotifyEvent) -> Option<Event> {
    let key = DirKey::from(e.wd.as_raw());
    let m = e.mask;
    if m.contains(F::IN_Q_OVERFLOW) {
        Some(Event::Overflow)
    } else if m.contains(F::IN_IGNORED) {
        Some(Event::Gone(key))
    } else if m.intersects(
        F::IN_CREATE
            | F::IN_DELETE
            | F::IN_MOVED_FROM
            | F::IN_MOVED_TO
            | F::IN_DELETE_SELF
            | F::IN_MOVE_SELF,
    ) {
        Some(Event::Entries(key))
    } else {
        match e.name {
            Some(name) if m.contains(F::IN_MODIFY) => Some(Event::Content(key, name)),
            _ => None,
        }
    }
}

impl Os for System {
    fn watch_dir(&self, dir: &Path) -> io::Result<DirKey> {
        let wd = self.fd.get_ref().0.add_watch(dir, mask())?;
        let key = DirKey::from(wd.as_raw());
        self.wds
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key, wd);
        Ok(key)
    }

    fn unwatch_dir(&self, key: DirKey) {
        let wd = self
            .wds
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&key);
        if let Some(wd) = wd {
            // Fails only when the kernel dropped the watch already (its directory is gone).
            let _ = self.fd.get_ref().0.rm_watch(wd);
        }
    }

    fn follow(&self, _key: DirKey, _dir: &Path, _names: &[OsString]) {}
}
