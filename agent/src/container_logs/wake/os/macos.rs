//! kqueue: a directory's descriptor reports changes to its entries, each followed file's its
//! writes; on the runtime's reactor (no thread of its own). A followed file is opened as the
//! guest's files are ([`crate::guest_file`]: no link followed, regular files only, never
//! blocking) and only watched, never read here. When a directory's entries change or a
//! followed file is renamed or removed, the directory's names are opened again, so a file
//! created later or replaced is followed from then on. One descriptor per watched directory
//! and per followed file that exists.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use nix::fcntl::{OFlag, open};
use nix::sys::event::{EvFlags, EventFilter, FilterFlag as N, KEvent, Kqueue};
use nix::sys::stat::Mode;
use tokio::io::{Interest, unix::AsyncFd};

use super::super::registry::{DirKey, Event, Os};
use crate::guest_file;

/// The kqueue's descriptor, for the reactor.
struct Kq(Kqueue);

impl AsRawFd for Kq {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_fd().as_raw_fd()
    }
}

/// `kq` on the runtime's reactor, for reading (a kqueue is readable while it has events).
#[allow(unsafe_code)]
fn register(kq: Kq) -> io::Result<AsyncFd<Kq>> {
    // SAFETY: `Kq` owns its descriptor (the `OwnedFd` inside nix's `Kqueue`), which stays open
    // and the same for as long as the `AsyncFd` that owns the `Kq` lives.
    unsafe { AsyncFd::register_with_interest(kq, Interest::READABLE) }.map_err(|e| e.into_parts().1)
}

/// One watched directory.
struct Dir {
    path: PathBuf,
    fd: OwnedFd,
    names: Vec<OsString>,
    /// The followed files open now: the file (its descriptor is the event's ident) and inode.
    files: HashMap<OsString, (File, u64)>,
}

#[derive(Default)]
struct State {
    next: DirKey,
    dirs: HashMap<DirKey, Dir>,
    /// Each registered descriptor: its directory, and its file name (none: the directory).
    idents: HashMap<usize, (DirKey, Option<OsString>)>,
}

/// One kqueue.
pub(crate) struct System {
    kq: AsyncFd<Kq>,
    state: Mutex<State>,
}

impl System {
    /// A new kqueue, registered with the runtime's reactor.
    ///
    /// # Errors
    /// No descriptor left, or there is no runtime.
    pub(crate) fn new() -> io::Result<Self> {
        Ok(Self {
            kq: register(Kq(Kqueue::new()?))?,
            state: Mutex::new(State::default()),
        })
    }

    /// The next events.
    ///
    /// # Errors
    /// Reading the kqueue failed.
    pub(crate) async fn events(&self) -> io::Result<Vec<Event>> {
        loop {
            let mut guard = self.kq.readable().await?;
            let empty = KEvent::new(
                0,
                EventFilter::EVFILT_VNODE,
                EvFlags::empty(),
                N::empty(),
                0,
                0,
            );
            let mut buf = [empty; 64];
            let now = nix::libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            let n = self.kq.get_ref().0.kevent(&[], &mut buf, Some(now))?;
            if n == 0 {
                guard.clear_ready();
                continue;
            }
            return Ok(self.convert(&buf[..n]));
        }
    }

    fn convert(&self, got: &[KEvent]) -> Vec<Event> {
        let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let mut out = Vec::new();
        let mut reopen = Vec::new();
        for ev in got {
            let Some((key, name)) = st.idents.get(&ev.ident()).cloned() else {
                continue; // closed since
            };
            let f = ev.fflags();
            match name {
                None if f.intersects(N::NOTE_DELETE | N::NOTE_REVOKE) => {
                    st.drop_dir(key);
                    out.push(Event::Gone(key));
                }
                None => {
                    out.push(Event::Entries(key));
                    reopen.push(key);
                }
                Some(_) if f.intersects(N::NOTE_DELETE | N::NOTE_RENAME | N::NOTE_REVOKE) => {
                    out.push(Event::Entries(key));
                    reopen.push(key);
                }
                Some(name) => out.push(Event::Content(key, name)),
            }
        }
        reopen.dedup();
        for key in reopen {
            self.open_files(&mut st, key);
        }
        out
    }

    /// Register `fd` for `flags`; closing it removes the registration.
    fn register(&self, fd: RawFd, flags: N) -> io::Result<()> {
        let ident =
            usize::try_from(fd).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        let ev = KEvent::new(
            ident,
            EventFilter::EVFILT_VNODE,
            EvFlags::EV_ADD | EvFlags::EV_CLEAR,
            flags,
            0,
            0,
        );
        self.kq.get_ref().0.kevent(&[ev], &mut [], None)?;
        Ok(())
    }

    /// Open and register the directory's followed names that exist and are not open as the
    /// file they name now; close the others.
    fn open_files(&self, st: &mut State, key: DirKey) {
        let State { dirs, idents, .. } = st;
        let Some(Dir {
            path, names, files, ..
        }) = dirs.get_mut(&key)
        else {
            return;
        };
        files.retain(|name, (file, ino)| {
            let keep = names.contains(name)
                && guest_file::open_in(path, &name.to_string_lossy()).is_ok_and(|g| g.ino == *ino);
            if !keep && let Ok(ident) = usize::try_from(file.as_raw_fd()) {
                // Before the descriptor closes: a file opened next may get its number.
                idents.remove(&ident);
            }
            keep
        });
        for name in names.iter() {
            if files.contains_key(name) {
                continue;
            }
            let Ok(g) = guest_file::open_in(path, &name.to_string_lossy()) else {
                continue; // not there (yet), or not a regular file
            };
            let flags = N::NOTE_WRITE
                | N::NOTE_EXTEND
                | N::NOTE_ATTRIB
                | N::NOTE_DELETE
                | N::NOTE_RENAME
                | N::NOTE_REVOKE;
            let fd = g.file.as_raw_fd();
            if let Ok(ident) = usize::try_from(fd)
                && self.register(fd, flags).is_ok()
            {
                idents.insert(ident, (key, Some(name.clone())));
                files.insert(name.clone(), (g.file, g.ino));
            }
        }
    }
}

impl State {
    fn drop_dir(&mut self, key: DirKey) {
        if let Some(d) = self.dirs.remove(&key) {
            for fd in std::iter::once(d.fd.as_raw_fd())
                .chain(d.files.values().map(|(f, _)| f.as_raw_fd()))
            {
                if let Ok(ident) = usize::try_from(fd) {
                    self.idents.remove(&ident);
                }
            }
        }
    }
}

impl Os for System {
    fn watch_dir(&self, dir: &Path) -> io::Result<DirKey> {
        let fd = open(
            dir,
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )?;
        self.register(
            fd.as_raw_fd(),
            N::NOTE_WRITE | N::NOTE_DELETE | N::NOTE_RENAME | N::NOTE_REVOKE,
        )?;
        let ident = usize::try_from(fd.as_raw_fd())
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        st.next += 1;
        let key = st.next;
        st.idents.insert(ident, (key, None));
        st.dirs.insert(
            key,
            Dir {
                path: dir.to_owned(),
                fd,
                names: Vec::new(),
                files: HashMap::new(),
            },
        );
        Ok(key)
    }

    fn unwatch_dir(&self, key: DirKey) {
        let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        // Closing the descriptors removes their registrations.
        st.drop_dir(key);
    }

    fn follow(&self, key: DirKey, _dir: &Path, names: &[OsString]) {
        let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(d) = st.dirs.get_mut(&key) {
            d.names = names.to_vec();
        }
        self.open_files(&mut st, key);
    }
}
