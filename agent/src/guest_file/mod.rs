//! Reading a file the guest can write (its `status` share, an `emptyDir`): the one way the
//! agent opens such a file. The guest is hostile (docs/guest.md, "What the agent trusts"): it
//! can put a symbolic link to a host file, a FIFO, a device, a socket or a directory where a
//! file belongs, or make a file of any size. So a file is opened relative to its directory,
//! itself opened without following a link, never through a link; anything but a regular file
//! is refused without being opened (and checked again on the open descriptor, so a swap in
//! between is caught), the open never blocks, and every read is bounded by its caller.
//! Blocking I/O; what a refusal means for the Pod is the caller's.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::fd::OwnedFd;
use std::path::Path;

use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag, open, openat};
use nix::sys::stat::{FileStat, Mode, SFlag, fstat, fstatat};

/// What was found where a regular file belongs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Refused {
    /// A symbolic link (it could name any host file).
    Link,
    /// A FIFO (a read could block for ever).
    Fifo,
    /// A block or character device.
    Device,
    Socket,
    Directory,
}

impl Refused {
    /// The metric label and the word in messages.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Link => "symlink",
            Self::Fifo => "fifo",
            Self::Device => "device",
            Self::Socket => "socket",
            Self::Directory => "directory",
        }
    }
}

/// Why a guest file could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum GuestFileError {
    /// There is no such file (nothing written yet).
    #[error("no such file")]
    Missing,
    /// Something other than a regular file is in its place.
    #[error("not a regular file but a {}", .0.as_str())]
    Refused(Refused),
    /// Opening or reading failed otherwise.
    #[error("cannot read the file")]
    Io(#[source] io::Error),
}

impl From<io::Error> for GuestFileError {
    fn from(e: io::Error) -> Self {
        Self::Io(e)
    }
}

/// An open regular file of the guest ([`open_in`]), or one of the agent's own that is read
/// the same way ([`GuestFile::open_own`]), with its identity when it was opened.
#[derive(Debug)]
pub(crate) struct GuestFile {
    pub file: File,
    /// Its length when opened.
    pub len: u64,
    /// Its inode number.
    pub ino: u64,
}

impl GuestFile {
    /// Open the agent's own file at `path` as any file: `tart run`'s log, in `--vm-log-dir`,
    /// which may sit behind a link the operator made. Never for a file the guest can write.
    ///
    /// # Errors
    /// [`GuestFileError::Missing`] when there is none, `Io` otherwise.
    pub(crate) fn open_own(path: &Path) -> Result<Self, GuestFileError> {
        use std::os::unix::fs::MetadataExt;
        let file = File::open(path).map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => GuestFileError::Missing,
            _ => GuestFileError::Io(e),
        })?;
        let meta = file.metadata()?;
        Ok(Self {
            len: meta.len(),
            ino: meta.ino(),
            file,
        })
    }

    /// Its last `max` bytes (of the length it had when opened), and whether it was longer.
    ///
    /// # Errors
    /// Read errors.
    pub(crate) fn read_last(mut self, max: u64) -> Result<(Vec<u8>, bool), GuestFileError> {
        let start = self.len.saturating_sub(max);
        self.file.seek(SeekFrom::Start(start))?;
        let mut buf = Vec::with_capacity(usize::try_from(self.len - start).unwrap_or(0));
        self.file.take(max).read_to_end(&mut buf)?;
        Ok((buf, start > 0))
    }
}

/// Open `<dir>/<name>` for reading: `dir` must be a directory and not a link, `name` one
/// path component naming a regular file.
///
/// # Errors
/// [`GuestFileError::Missing`] when either is absent, [`GuestFileError::Refused`] for anything
/// in `name`'s place but a regular file (or a link in `dir`'s), `Io` otherwise.
pub(crate) fn open_in(dir: &Path, name: &str) -> Result<GuestFile, GuestFileError> {
    if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\0']) {
        return Err(GuestFileError::Io(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not one path component",
        )));
    }
    let dirfd = open(
        dir,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| match e {
        // Linux says ENOTDIR, not ELOOP, for a link opened with O_DIRECTORY | O_NOFOLLOW.
        Errno::ENOTDIR if std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_symlink()) => {
            GuestFileError::Refused(Refused::Link)
        }
        e => open_error(e),
    })?;
    // Refuse without opening: opening a FIFO or a device can block or act.
    let before = fstatat(&dirfd, name, AtFlags::AT_SYMLINK_NOFOLLOW).map_err(|e| match e {
        Errno::ENOENT => GuestFileError::Missing,
        e => GuestFileError::Io(e.into()),
    })?;
    refuse_unless_regular(&before)?;
    let fd: OwnedFd = openat(
        &dirfd,
        name,
        OFlag::O_RDONLY
            | OFlag::O_NOFOLLOW
            | OFlag::O_NONBLOCK
            | OFlag::O_NOCTTY
            | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(open_error)?;
    let now = fstat(&fd).map_err(|e| GuestFileError::Io(e.into()))?;
    refuse_unless_regular(&now)?;
    Ok(GuestFile {
        file: File::from(fd),
        len: u64::try_from(now.st_size).unwrap_or(0),
        ino: now.st_ino,
    })
}

/// Open the file at `path` (its last component in its parent) as [`open_in`] does.
///
/// # Errors
/// As [`open_in`].
pub(crate) fn open_path(path: &Path) -> Result<GuestFile, GuestFileError> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) else {
        return Err(GuestFileError::Io(io::Error::new(
            io::ErrorKind::InvalidInput,
            "no file name",
        )));
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    open_in(dir, name)
}

/// The first `max` bytes of the file at `path`.
///
/// # Errors
/// As [`open_in`], and read errors.
pub(crate) fn read_head(path: &Path, max: u64) -> Result<Vec<u8>, GuestFileError> {
    let f = open_path(path)?;
    let mut buf = Vec::with_capacity(usize::try_from(f.len.min(max)).unwrap_or(0));
    f.file.take(max).read_to_end(&mut buf)?;
    Ok(buf)
}

/// The last `max` bytes of the file at `path`, and whether the file was longer.
///
/// # Errors
/// As [`open_in`], and read errors.
pub(crate) fn read_last(path: &Path, max: u64) -> Result<(Vec<u8>, bool), GuestFileError> {
    open_path(path)?.read_last(max)
}

fn open_error(e: Errno) -> GuestFileError {
    match e {
        Errno::ENOENT => GuestFileError::Missing,
        // O_NOFOLLOW on a link fails with ELOOP, on Linux and macOS alike.
        Errno::ELOOP => GuestFileError::Refused(Refused::Link),
        e => GuestFileError::Io(e.into()),
    }
}

fn refuse_unless_regular(st: &FileStat) -> Result<(), GuestFileError> {
    let kind = SFlag::from_bits_truncate(st.st_mode & SFlag::S_IFMT.bits());
    let refused = match kind {
        SFlag::S_IFREG => return Ok(()),
        SFlag::S_IFLNK => Refused::Link,
        SFlag::S_IFIFO => Refused::Fifo,
        SFlag::S_IFCHR | SFlag::S_IFBLK => Refused::Device,
        SFlag::S_IFSOCK => Refused::Socket,
        SFlag::S_IFDIR => Refused::Directory,
        _ => Refused::Device,
    };
    Err(GuestFileError::Refused(refused))
}

#[cfg(test)]
mod tests;
