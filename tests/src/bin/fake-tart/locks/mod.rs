//! The locks of docs/reference/tart-cli.md §1.4: the classic POSIX `fcntl` write lock on
//! `config.json` that `run` holds for the VM's life (and `F_GETLK` to find its PID), and `flock`s
//! on `$TART_HOME`, the per-host OCI cache directory and `tmp/<entry>` working directories. Also
//! tmp GC (docs/reference/tart-cli.md §1.5).

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::Path;
use std::time::Duration;

use nix::fcntl::{FcntlArg, Flock, FlockArg, fcntl};

/// How often a "blocking" flock is retried. Polling (rather than a blocking syscall) keeps the
/// process responsive to SIGINT while it waits.
const FLOCK_POLL: Duration = Duration::from_millis(5);

fn whole_file_lock(kind: libc::c_short) -> libc::flock {
    // l_len 0 = to the end of the file, whatever its size: the whole file, as Tart's PIDLock.
    libc::flock {
        l_type: kind,
        l_whence: libc::SEEK_SET as libc::c_short,
        l_start: 0,
        l_len: 0,
        l_pid: 0,
    }
}

/// The PID holding a POSIX write lock on `config` (`F_GETLK`), if any
/// (docs/reference/tart-cli.md §1.4). A missing file counts as unlocked.
pub(crate) fn lock_holder(config: &Path) -> Option<i32> {
    let f = File::open(config).ok()?;
    let mut fl = whole_file_lock(libc::F_WRLCK as libc::c_short);
    fcntl(&f, FcntlArg::F_GETLK(&mut fl)).ok()?;
    (fl.l_type != libc::F_UNLCK as libc::c_short && fl.l_pid != 0).then_some(fl.l_pid)
}

/// Try-locks `config` with a classic POSIX `F_SETLK`/`F_WRLCK` (NOT an OFD lock,
/// docs/reference/tart-cli.md §8). The returned `File` must be kept open for as long as the lock
/// must be held; closing ANY descriptor of that file in this process releases it (POSIX semantics).
pub(crate) fn try_lock_config(config: &Path) -> io::Result<Option<File>> {
    let f = OpenOptions::new().read(true).write(true).open(config)?;
    let fl = whole_file_lock(libc::F_WRLCK as libc::c_short);
    match fcntl(&f, FcntlArg::F_SETLK(&fl)) {
        Ok(_) => Ok(Some(f)),
        Err(nix::errno::Errno::EAGAIN | nix::errno::Errno::EACCES) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// An exclusive `flock` held until dropped.
pub(crate) type FlockGuard = Flock<File>;

fn open_for_flock(path: &Path) -> io::Result<File> {
    if path.is_dir() {
        File::open(path)
    } else {
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
    }
}

/// Try-locks the open file `f`; gives it back (`Err`) while another process holds the lock.
fn try_lock(f: File) -> io::Result<Result<FlockGuard, File>> {
    match Flock::lock(f, FlockArg::LockExclusiveNonblock) {
        Ok(g) => Ok(Ok(g)),
        Err((f, nix::errno::Errno::EWOULDBLOCK)) => Ok(Err(f)),
        Err((_, e)) => Err(e.into()),
    }
}

/// Locks the open file `f`, trying again every [`FLOCK_POLL`] while another process holds it.
async fn lock_polled(mut f: File) -> io::Result<FlockGuard> {
    loop {
        match try_lock(f)? {
            Ok(g) => return Ok(g),
            Err(back) => f = back,
        }
        tokio::time::sleep(FLOCK_POLL).await;
    }
}

/// Try-locks `path` (a directory or a lock file, created if missing).
pub(crate) fn try_flock(path: &Path) -> io::Result<Option<FlockGuard>> {
    Ok(try_lock(open_for_flock(path)?)?.ok())
}

/// Locks `path`, waiting with no timeout (docs/reference/tart-cli.md §1.4: the `$TART_HOME` and
/// host locks block).
pub(crate) async fn flock(path: &Path) -> io::Result<FlockGuard> {
    lock_polled(open_for_flock(path)?).await
}

/// Locks `path` with a blocking `flock(2)`; only for the counters file's tiny critical section.
pub(crate) fn flock_blocking(path: &Path) -> io::Result<FlockGuard> {
    let f = open_for_flock(path)?;
    Flock::lock(f, FlockArg::LockExclusive).map_err(|(_, e)| e.into())
}

/// How many times a `tmp/` working directory is made again after another command's tmp GC
/// deleted it before it was locked.
const CREATE_ATTEMPTS: usize = 100;

/// Makes the `tmp/` working directory `dir` and locks it, so that tmp GC
/// (docs/reference/tart-cli.md §1.5) keeps it. Between the `mkdir` and the lock, another
/// command's GC may delete the new, still unlocked directory (the lock would then be taken on
/// a deleted directory, or on a plain file made in its place); the fake makes it again until
/// it holds the lock on the directory `dir` names, so that this race never fails a command:
/// failures come from knobs.
pub(crate) async fn create_locked_dir(dir: &Path) -> io::Result<FlockGuard> {
    for _ in 0..CREATE_ATTEMPTS {
        fs::create_dir_all(dir)?;
        let f = match File::open(dir) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        let guard = lock_polled(f).await?;
        if names_the_same(&guard, dir) {
            return Ok(guard);
        }
    }
    Err(io::Error::other(format!(
        "{} was deleted {CREATE_ATTEMPTS} times before it could be locked",
        dir.display()
    )))
}

/// Whether `dir` still names the directory `locked` is open on.
fn names_the_same(locked: &File, dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (locked.metadata(), fs::metadata(dir)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Tmp GC (docs/reference/tart-cli.md §1.5): delete every `tmp/` entry no live process holds a
/// flock on.
pub(crate) fn gc_tmp(tmp: &Path) -> io::Result<()> {
    let entries = match fs::read_dir(tmp) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    for entry in entries.flatten() {
        let path = entry.path();
        // Only what is there: an entry gone since the listing is not made again as a file.
        let Ok(f) = File::open(&path) else {
            continue;
        };
        let Ok(Ok(guard)) = try_lock(f) else {
            continue;
        };
        let res = if path.is_dir() {
            fs::remove_dir_all(&path)
        } else {
            fs::remove_file(&path)
        };
        drop(guard);
        match res {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
