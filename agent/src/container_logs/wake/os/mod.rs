//! The OS's file watch behind [`Os`]: inotify on Linux (one watch per directory; its events
//! name the file), kqueue on macOS (one descriptor per directory and per followed file: a
//! directory's events only say its entries changed). FSEvents is not used: it batches
//! events with a latency of its own. Elsewhere there is no watch and every waiter polls.

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "macos")]
mod macos;

#[cfg(target_os = "linux")]
pub(crate) use linux::System;
#[cfg(target_os = "macos")]
pub(crate) use macos::System;

/// No watch on this OS.
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
pub(crate) struct System;

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
impl System {
    pub(crate) fn new() -> std::io::Result<Self> {
        Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
    }

    pub(crate) async fn events(&self) -> std::io::Result<Vec<super::registry::Event>> {
        std::future::pending().await
    }
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
impl super::registry::Os for System {
    fn watch_dir(&self, _dir: &std::path::Path) -> std::io::Result<super::registry::DirKey> {
        Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
    }
    fn unwatch_dir(&self, _key: super::registry::DirKey) {}
    fn follow(&self, _: super::registry::DirKey, _: &std::path::Path, _: &[std::ffi::OsString]) {}
}
